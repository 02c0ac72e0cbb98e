"""The kernels routes: architectures, compile, occupancy, run.

Compile and run start processes, so besides the `gpudojo` resource they need `execute` on
`kernels` (jupyter_server's permission to run code): a read-only user of a shared server
can read the architecture list and occupancy figures but start nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .base import GPUDojoHandler


def _models():
    from ..kernels import models

    return models


class KernelsHandler(GPUDojoHandler):
    async def call(self, runner: Callable[..., Any], fn: Callable[..., Any], *args: Any) -> Any:
        """Run a kernel service call on ``runner``'s thread (its errors map to 4xx/5xx in the base handler)."""
        return await runner(fn, *args)


class ArchsHandler(KernelsHandler):
    api_doc = {
        "get": {"summary": "Architectures the compiler targets, with their per-SM limits", "response": "ArchList"}
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        gpu = await self.services.gpu_target()
        kernels = self.services.kernels
        self.write_model(await self.call(self.services.in_kernel_thread, kernels.archs, gpu))


class ExamplesHandler(KernelsHandler):
    api_doc = {
        "get": {
            "summary": "Kernel launches the labs offer to the playground (?lab=ID for one lab)",
            "response": "KernelExamples",
            "query": {"lab": {"description": "Only this lab's launches", "schema": {"type": "string"}}},
        }
    }

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from ..kernels.examples import load_examples

        lab = self.get_query_argument("lab", None)
        labs_root = self.services.course.catalog_source.labs_root
        self.write_model(await self.services.in_io_thread(load_examples, labs_root, lab))


class CompileHandler(KernelsHandler):
    api_doc = {
        "post": {
            "summary": "Compile a CUDA C or numba kernel: PTX, SASS, resources, occupancy, diagnostics",
            "request": "CompileRequest",
            "response": "CompileResult",
            "errors": [502, 503, 504],
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        await self.require_execute("Compiling and running kernels")
        req = self.parse_body(_models().CompileRequest)
        kernels = self.services.kernels
        self.write_model(await self.call(self.services.in_kernel_thread, kernels.compile, req))


class OccupancyHandler(KernelsHandler):
    api_doc = {
        "post": {
            "summary": "Theoretical occupancy for registers, shared memory and block size on an architecture",
            "request": "OccupancyRequest",
            "response": "OccupancyReport",
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.parse_body(_models().OccupancyRequest)
        kernels = self.services.kernels
        self.write_model(await self.call(self.services.in_io_thread, kernels.occupancy, req))


class RunHandler(KernelsHandler):
    api_doc = {
        "post": {
            "summary": "Run a kernel on the GPU (or a numba kernel in the simulator), check and time it",
            "request": "RunRequest",
            "response": "RunResult",
            "errors": [502, 503, 504],
        }
    }

    @web.authenticated
    @authorized
    async def post(self) -> None:
        await self.require_execute("Compiling and running kernels")
        req = self.parse_body(_models().RunRequest)
        gpu = await self.services.gpu_target()
        kernels = self.services.kernels
        self.write_model(await self.call(self.services.in_run_thread, kernels.run, req, gpu))

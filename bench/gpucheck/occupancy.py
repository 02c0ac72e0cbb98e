"""Step 4: our occupancy calculator against the driver's
cuOccupancyMaxActiveBlocksPerMultiprocessor on the loaded cubin, and the sm_90 numba
shared-memory question settled."""

from __future__ import annotations

import json
from typing import Any

from gpucheck.occupancy_kernels import OCC_CASES, build_occupancy_kernel
from gpucheck.step import Ctx, Result, skipped


class Driver:
    """The CUDA driver API through cuda-bindings: load cubins, read function attributes, ask
    cuOccupancyMaxActiveBlocksPerMultiprocessor (the calculation behind the runtime's
    cudaOccupancyMaxActiveBlocksPerMultiprocessor)."""

    def __init__(self) -> None:
        from cuda.bindings import driver as cu

        self.cu = cu
        self._check(cu.cuInit(0))
        self.dev = self._check(cu.cuDeviceGet(0))
        self.ctx = self._check(cu.cuDevicePrimaryCtxRetain(self.dev))
        self._check(cu.cuCtxSetCurrent(self.ctx))
        self.modules: list[Any] = []

    def _check(self, res: Any) -> Any:
        err, *rest = res if isinstance(res, tuple) else (res,)
        if err != self.cu.CUresult.CUDA_SUCCESS:
            _, text = self.cu.cuGetErrorString(err)
            raise RuntimeError(f"{err.name}: {text.decode() if isinstance(text, bytes) else text}")
        return rest[0] if len(rest) == 1 else (rest or None)

    def attribute(self, name: str) -> int:
        attr = getattr(self.cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(self._check(self.cu.cuDeviceGetAttribute(attr, self.dev)))

    def function(self, cubin: bytes, symbol: str) -> Any:
        import numpy as np

        image = np.frombuffer(cubin, dtype=np.uint8).copy()
        module = self._check(self.cu.cuModuleLoadData(image.ctypes.data))
        self.modules.append((module, image))
        return self._check(self.cu.cuModuleGetFunction(module, symbol.encode()))

    def func_attr(self, fn: Any, name: str) -> int:
        attr = getattr(self.cu.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        return int(self._check(self.cu.cuFuncGetAttribute(attr, fn)))

    def max_active_blocks(self, fn: Any, block: int, dynamic: int) -> int:
        if dynamic:
            attr = self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self._check(self.cu.cuFuncSetAttribute(fn, attr, dynamic))
        return int(self._check(self.cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, block, dynamic)))


def cupy_occupancy(fn: Any, block: int, dynamic: int) -> int | str:
    """The same question through CuPy's binding of the driver (a second witness), or why not."""
    try:
        from cupy.cuda import driver as cupy_driver

        return int(cupy_driver.occupancyMaxActiveBlocksPerMultiprocessor(int(fn), block, dynamic))
    except Exception as err:
        return f"{type(err).__name__}: {err}"[:200]


# Device attribute -> the archs.toml field it should equal.
DEVICE_VS_TABLE = {
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": "shared_bytes_per_sm",
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": "max_shared_bytes_per_block",
    "RESERVED_SHARED_MEMORY_PER_BLOCK": "reserved_shared_bytes_per_block",
    "MAX_BLOCKS_PER_MULTIPROCESSOR": "max_blocks_per_sm",
    "MAX_REGISTERS_PER_MULTIPROCESSOR": "registers_per_sm",
    "MAX_THREADS_PER_MULTIPROCESSOR": None,
    "WARP_SIZE": "warp_size",
    "MULTIPROCESSOR_COUNT": None,
}


def step_occupancy(ctx: Ctx) -> Result:
    from gpudojo.kernels.occupancy import limits_for, occupancy

    arch = ctx.arch
    lim = limits_for(arch)
    doc: dict[str, Any] = {"arch": arch, "limits_used": lim.model_dump(), "cases": [], "device": None}
    driver = None
    if ctx.gpu:
        try:
            driver = Driver()
            attrs = {name: driver.attribute(name) for name in DEVICE_VS_TABLE}
            table = lim.model_dump()
            doc["device"] = {
                "attributes": attrs,
                "differs_from_archs_toml": {
                    name: {"device": attrs[name], "archs.toml": table.get(field)}
                    for name, field in DEVICE_VS_TABLE.items()
                    if field and table.get(field) is not None and attrs[name] != table.get(field)
                },
            }
            threads = attrs["MAX_THREADS_PER_MULTIPROCESSOR"]
            if threads // 32 != lim.max_warps_per_sm:
                doc["device"]["differs_from_archs_toml"]["MAX_THREADS_PER_MULTIPROCESSOR"] = {
                    "device": threads,
                    "archs.toml": lim.max_warps_per_sm * 32,
                }
        except Exception as err:
            doc["driver_error"] = f"{type(err).__name__}: {err}"
            driver = None
    for case in OCC_CASES:
        cid, what, _, _, _, block, dynamic, path = case
        if dynamic == -1:
            dynamic = lim.max_shared_bytes_per_block
        row: dict[str, Any] = {"id": cid, "what": what, "path": path, "block": block, "dynamic_shared_bytes": dynamic}
        try:
            built = build_occupancy_kernel(case, arch)
        except Exception as err:
            row["error"] = f"compile: {type(err).__name__}: {err}"
            doc["cases"].append(row)
            continue
        if dynamic == lim.max_shared_bytes_per_block:
            dynamic = max(dynamic - built["static_shared_bytes"], 0)
            row["dynamic_shared_bytes"] = dynamic
        ours = occupancy(arch, built["registers"], built["static_shared_bytes"] + dynamic, block)
        row.update({k: v for k, v in built.items() if k != "cubin"})
        row["calculator_input"] = {
            "registers": built["registers"],
            "shared_bytes": built["static_shared_bytes"] + dynamic,
            "block_size": block,
        }
        row["ours"] = {
            "blocks_per_sm": ours.active_blocks_per_sm,
            "warps_per_sm": ours.active_warps_per_sm,
            "limited_by": ours.limited_by,
            "shared_bytes_counted": ours.shared_bytes_per_block,
            "error": ours.error,
        }
        row["driver"] = None
        if driver is not None:
            try:
                fn = driver.function(built["cubin"], built["symbol"])
                drv = {
                    "registers": driver.func_attr(fn, "NUM_REGS"),
                    "static_shared_bytes": driver.func_attr(fn, "SHARED_SIZE_BYTES"),
                    "max_threads_per_block": driver.func_attr(fn, "MAX_THREADS_PER_BLOCK"),
                    "blocks_per_sm": driver.max_active_blocks(fn, block, dynamic),
                }
                drv["cupy_blocks_per_sm"] = cupy_occupancy(fn, block, dynamic)
                with_driver_inputs = occupancy(arch, drv["registers"], drv["static_shared_bytes"] + dynamic, block)
                drv["ours_with_driver_inputs"] = with_driver_inputs.active_blocks_per_sm
                row["driver"] = drv
                row["agree"] = drv["blocks_per_sm"] == ours.active_blocks_per_sm
            except Exception as err:
                row["driver"] = {"error": f"{type(err).__name__}: {err}"}
                row["agree"] = False
        doc["cases"].append(row)
    doc["sm90_numba_question"] = numba_shared_question(doc)
    (ctx.work / "occupancy.json").write_text(json.dumps(doc, indent=1))
    compiled = [c for c in doc["cases"] if "error" not in c]
    if driver is None:
        note = f"{len(compiled)}/{len(OCC_CASES)} cases compiled for {arch}, our calculator's answers written"
        if ctx.gpu:
            return "failed", f"no driver answers ({doc.get('driver_error')}); {note}", doc_brief(doc)
        return skipped(
            note + "; " + doc["sm90_numba_question"]["summary"], doc_brief(doc), len(compiled) == len(OCC_CASES)
        )
    differ = [c["id"] for c in doc["cases"] if not c.get("agree")]
    note = f"{len(OCC_CASES) - len(differ)}/{len(OCC_CASES)} agree with the driver"
    if differ:
        note += f"; differ: {', '.join(differ)}"
    if doc["device"] and doc["device"]["differs_from_archs_toml"]:
        note += f"; archs.toml differs on {', '.join(doc['device']['differs_from_archs_toml'])}"
    note += "; " + doc["sm90_numba_question"]["summary"]
    return ("passed" if not differ else "failed"), note, doc_brief(doc)


def doc_brief(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "arch": doc["arch"],
        "device": doc["device"],
        "cases": [
            {
                "id": c["id"],
                "ours": (c.get("ours") or {}).get("blocks_per_sm"),
                "driver": (c.get("driver") or {}).get("blocks_per_sm"),
                **({"error": c["error"]} if "error" in c else {}),
            }
            for c in doc["cases"]
        ],
        "sm90_numba_question": doc["sm90_numba_question"],
    }


def numba_shared_question(doc: dict[str, Any]) -> dict[str, Any]:
    """The kernel workbench's open question: nvJitLink's report for sm_90 says 1 KiB more shared
    memory than the PTX declares, and the calculator adds the 1 KiB per-block reserve on top.
    Counted twice, or does the cubin really hold that kilobyte?"""
    rows = {c["id"]: c for c in doc["cases"] if "error" not in c}
    probe = rows.get("numba-44k-64") or rows.get("nvjitlink-44k-64")
    if probe is None:
        return {"summary": "the 44 KiB nvJitLink cases did not compile", "answer": None}
    extra = probe["static_shared_bytes"] - probe["ptx_declared_shared_bytes"]
    out: dict[str, Any] = {
        "case": probe["id"],
        "ptx_declares": probe["ptx_declared_shared_bytes"],
        "linker_reports": probe["static_shared_bytes"],
        "calculator_counts": probe["ours"]["shared_bytes_counted"],
        "calculator_blocks": probe["ours"]["blocks_per_sm"],
    }
    drv = probe.get("driver") or {}
    if "static_shared_bytes" not in drv:
        out["answer"] = None
        out["summary"] = (
            f"{probe['id']}: PTX declares {out['ptx_declares']} B, the linker reports {out['linker_reports']} B "
            f"(+{extra}), the calculator counts {out['calculator_counts']} B -> {out['calculator_blocks']} blocks/SM; "
            "the driver's answer needs a GPU"
        )
        return out
    out["driver_static_shared_bytes"] = drv["static_shared_bytes"]
    out["driver_blocks"] = drv["blocks_per_sm"]
    twice = drv["blocks_per_sm"] != probe["ours"]["blocks_per_sm"]
    out["answer"] = "counted twice" if twice else "not counted twice"
    out["summary"] = (
        f"sm_90 numba shared memory: {out['answer']} (linker {out['linker_reports']} B, driver's function "
        f"attribute {drv['static_shared_bytes']} B; driver {drv['blocks_per_sm']} blocks/SM, ours "
        f"{probe['ours']['blocks_per_sm']})"
    )
    return out

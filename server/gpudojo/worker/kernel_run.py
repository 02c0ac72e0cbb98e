"""Run one kernel launch in this child process and print a RunResult as the last stdout line.

Started by the kernel service with ``python -m gpudojo.worker.kernel_run``, the request on
stdin as {"request": RunRequest, "mode": "gpu" | "simulator" | "cpu-emulation"} (the last
with "emulator": {cache_dir, compile_timeout_s, time_limit_s}). In simulator mode the
service has set NUMBA_ENABLE_CUDASIM=1 before this process imported numba; in cpu-emulation
mode CUDA C is built with g++ and run by gpudojo.kernels.cpu_runner in a grandchild. An illegal
address, a segfault or an endless loop ends this process, never the server.

Inputs are built from the typed spec, the expected outputs are computed with NumPy from
the inputs as they were before the launch, the kernel runs once on fresh inputs (checked),
then ``warmup`` + ``repeats`` more times for timing (GPU: CUDA events).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
import traceback
from typing import Any

from gpudojo.kernels.models import ArrayArg, RunRequest, RunResult
from gpudojo.kernels.parse import python_error_line, simulator_thread
from gpudojo.kernels.service import mode_note

MAX_STDOUT = 20_000
PREVIEW = 8


def array_dtype(name: str) -> Any:
    """The NumPy dtype of an ArrayDtype name: bfloat16 is ml_dtypes' (NumPy has none), whose
    conversions from float32/float64 round to nearest even and keep NaN and infinities."""
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def is_bfloat16(value: Any) -> bool:
    return getattr(getattr(value, "dtype", None), "name", None) == "bfloat16"


def build_inputs(req: RunRequest) -> dict[str, Any]:
    """NumPy values for every argument, from its spec."""
    import numpy as np

    values: dict[str, Any] = {}
    for arg in req.args:
        if isinstance(arg, ArrayArg):
            dtype = array_dtype(arg.dtype)
            shape = tuple(arg.shape)
            if arg.init == "zeros":
                value = np.zeros(shape, dtype)
            elif arg.init == "ones":
                value = np.ones(shape, dtype)
            elif arg.init == "full":
                value = np.full(shape, arg.value, dtype)
            elif arg.init == "arange":
                value = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
            else:
                rng = np.random.default_rng(arg.seed)
                if "float" in arg.dtype:
                    value = rng.random(shape).astype(dtype)
                else:
                    value = rng.integers(0, 100, shape).astype(dtype)
            values[arg.name] = value
        else:
            values[arg.name] = np.dtype(arg.dtype).type(arg.value)
    return values


def expected_outputs(req: RunRequest, inputs: dict[str, Any]) -> dict[str, Any]:
    """Each expected expression evaluated with NumPy over copies of the inputs."""
    import numpy as np

    out = {}
    for name, expr in req.expected.items():
        scope = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in inputs.items()}
        # Evaluated in this child process, like the kernel itself: no sandbox is claimed.
        out[name] = np.asarray(eval(compile(expr, f"<expected {name}>", "eval"), {"np": np}, scope))
    return out


def check_outputs(req: RunRequest, got: dict[str, Any], expected: dict[str, Any]) -> list[dict[str, Any]]:
    import numpy as np

    checks = []
    for arg in req.args:
        if not (isinstance(arg, ArrayArg) and arg.output):
            continue
        value = np.asarray(got[arg.name])
        preview = [float(v) for v in value.ravel()[:PREVIEW]]
        if arg.name not in expected:
            checks.append({"name": arg.name, "ok": True, "checked": False, "preview": preview})
            continue
        want = np.broadcast_to(expected[arg.name], value.shape).astype(np.float64)
        have = value.astype(np.float64)
        close = np.isclose(have, want, rtol=req.rtol, atol=req.atol, equal_nan=True)
        bad = np.flatnonzero(~close.ravel())
        first = None
        if bad.size:
            i = int(bad[0])
            first = {
                "index": [int(n) for n in np.unravel_index(i, value.shape)],
                "got": float(have.ravel()[i]),
                "expected": float(want.ravel()[i]),
            }
        checks.append(
            {
                "name": arg.name,
                "ok": not bad.size,
                "checked": True,
                "max_abs_error": _max_abs_error(have, want),
                "mismatches": int(bad.size),
                "first_mismatch": first,
                "preview": preview,
            }
        )
    return checks


def _max_abs_error(have: Any, want: Any) -> float | None:
    """The largest |got - expected|, equal values (infinities, NaN against NaN) counting 0; None
    when a mismatch makes it infinite or NaN."""
    import numpy as np

    if not have.size:
        return 0.0
    with np.errstate(invalid="ignore"):
        same = (have == want) | (np.isnan(have) & np.isnan(want))
        worst = float(np.max(np.where(same, 0.0, np.abs(have - want))))
    return worst if np.isfinite(worst) else None


def _timing(times_ms: list[float], req: RunRequest, method: str) -> dict[str, Any]:
    return {
        "warmup": req.warmup,
        "repeats": len(times_ms),
        "mean_ms": sum(times_ms) / len(times_ms),
        "min_ms": min(times_ms),
        "max_ms": max(times_ms),
        "method": method,
    }


def run_simulator(req: RunRequest, inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """numba kernel in the CUDA simulator (NUMBA_ENABLE_CUDASIM=1 is already set)."""
    from gpudojo.worker.compile import NUMBA_FILE, load_numba_module

    namespace, kernels = load_numba_module(req.source, NUMBA_FILE)
    kernel = namespace.get(req.kernel)
    if kernel is None or req.kernel not in kernels:
        raise LookupError(f"No kernel named {req.kernel!r} (kernels: {', '.join(kernels) or 'none'})")
    args = [v.copy() if hasattr(v, "copy") and v.ndim else v for v in inputs.values()]
    captured = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(captured):
        kernel[tuple(req.grid), tuple(req.block), 0, req.shared_bytes](*args)
    elapsed = (time.perf_counter() - t0) * 1000
    got = dict(zip(inputs, args, strict=True))
    timing = _timing([elapsed], req, "wall clock of one simulated launch (not GPU time)")
    return got, timing, captured.getvalue()


def run_numba_gpu(req: RunRequest, inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    from numba import cuda

    from gpudojo.worker.compile import NUMBA_FILE, load_numba_module

    namespace, kernels = load_numba_module(req.source, NUMBA_FILE)
    kernel = namespace.get(req.kernel)
    if kernel is None or req.kernel not in kernels:
        raise LookupError(f"No kernel named {req.kernel!r} (kernels: {', '.join(kernels) or 'none'})")
    config = (tuple(req.grid), tuple(req.block), 0, req.shared_bytes)

    def fresh():
        return [cuda.to_device(v) if hasattr(v, "ndim") and v.ndim else v for v in inputs.values()]

    args = fresh()
    kernel[config](*args)
    cuda.synchronize()
    got = {name: (a.copy_to_host() if hasattr(a, "copy_to_host") else a) for name, a in zip(inputs, args, strict=True)}
    timed = fresh()
    for _ in range(req.warmup):
        kernel[config](*timed)
    times = []
    for _ in range(req.repeats):
        start, end = cuda.event(), cuda.event()
        start.record()
        kernel[config](*timed)
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return got, _timing(times, req, "CUDA events"), ""


def run_cupy(req: RunRequest, inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    import cupy as cp
    import numpy as np

    opts = [f"-std={req.options.std}", "-lineinfo"]
    if req.options.fast_math:
        opts.append("--use_fast_math")
    if req.options.max_registers:
        opts.append(f"-maxrregcount={req.options.max_registers}")
    opts += [f"-D{k}={v}" for k, v in sorted(req.options.defines.items())]
    # cuda_bf16.h / cuda_fp16.h as the compile report's NVRTC found them (CuPy may have no copy).
    with contextlib.suppress(Exception):
        from gpudojo.worker.compile import fp_headers_dir

        if headers := fp_headers_dir():
            opts.append(f"--include-path={headers}")
    names = (req.kernel,) if "<" in req.kernel else ()
    module = cp.RawModule(code=req.source, options=tuple(opts), name_expressions=names)
    fn = module.get_function(req.kernel)

    def to_device(v: Any) -> Any:
        # CuPy has no bfloat16 dtype: a bfloat16 array travels as its raw 16-bit patterns, which
        # is what a __nv_bfloat16* parameter reads.
        return cp.asarray(v.view(np.uint16) if is_bfloat16(v) else v)

    def fresh():
        return [to_device(v) if hasattr(v, "ndim") and v.ndim else v for v in inputs.values()]

    args = fresh()
    fn(tuple(req.grid), tuple(req.block), tuple(args), shared_mem=req.shared_bytes)
    cp.cuda.Device().synchronize()
    got = {}
    for (name, sent), a in zip(inputs.items(), args, strict=True):
        got[name] = a
        if isinstance(a, cp.ndarray):
            got[name] = cp.asnumpy(a).view(sent.dtype) if is_bfloat16(sent) else cp.asnumpy(a)
    timed = fresh()
    for _ in range(req.warmup):
        fn(tuple(req.grid), tuple(req.block), tuple(timed), shared_mem=req.shared_bytes)
    times = []
    for _ in range(req.repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn(tuple(req.grid), tuple(req.block), tuple(timed), shared_mem=req.shared_bytes)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return got, _timing(times, req, "CUDA events"), ""


def device_name() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        return name.decode() if isinstance(name, bytes) else name
    except Exception:
        return None


def run_cpu_emulation(
    req: RunRequest, inputs: dict[str, Any], options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], str, dict[str, Any]]:
    from pathlib import Path

    from gpudojo.kernels.cpu_runner.execute import run_emulated

    return run_emulated(
        req,
        inputs,
        Path(options["cache_dir"]),
        float(options["time_limit_s"]),
        float(options["compile_timeout_s"]),
    )


def classify(err: BaseException, req: RunRequest) -> dict[str, Any]:
    """A RunError for an exception raised by the launch."""
    from gpudojo.kernels.cpu_runner.execute import EmulatorError

    if isinstance(err, EmulatorError):
        return err.error
    text = "".join(traceback.format_exception(err))
    message = f"{type(err).__name__}: {err}".strip()
    line = python_error_line(text, "kernel.py") if req.language == "numba" else None
    if isinstance(err, IndexError) and (where := simulator_thread(str(err))):
        thread, block = where
        return {"kind": "out_of_bounds", "message": message, "thread": thread, "block": block, "line": line}
    if "ILLEGAL_ADDRESS" in message or "illegal memory access" in message:
        return {"kind": "illegal_address", "message": message, "line": line}
    if isinstance(err, LookupError | TypeError) and "kernel" in message.lower():
        return {"kind": "bad_spec", "message": message, "line": line}
    return {"kind": "exception", "message": message[:4000], "line": line}


def main() -> None:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    message = json.loads(sys.stdin.read())
    req = RunRequest.model_validate(message["request"])
    mode = message["mode"]
    result: dict[str, Any] = {"status": "error", "mode": mode, "mode_note": mode_note(mode)}
    if mode == "gpu":
        result["device"] = device_name()
    elif mode == "cpu-emulation":
        result["device"] = "CPU (gpudojo emulator)"
    try:
        inputs = build_inputs(req)
        expected = expected_outputs(req, inputs)
    except Exception as err:
        result["error"] = {
            "kind": "check_error",
            "message": f"Building the inputs or the expected outputs failed: {type(err).__name__}: {err}",
        }
    else:
        try:
            if mode == "cpu-emulation":
                got, timing, stdout, result["emulator"] = run_cpu_emulation(req, inputs, message["emulator"])
                result["memory"] = result["emulator"].pop("memory", None)
            elif mode == "simulator":
                got, timing, stdout = run_simulator(req, inputs)
            elif req.language == "numba":
                got, timing, stdout = run_numba_gpu(req, inputs)
            else:
                got, timing, stdout = run_cupy(req, inputs)
        except Exception as err:
            result["error"] = classify(err, req)
        else:
            checks = check_outputs(req, got, expected)
            checked = [c for c in checks if c["checked"]]
            status = "ran" if not checked else ("passed" if all(c["ok"] for c in checked) else "failed")
            result.update(status=status, checks=checks, timing=timing, stdout=stdout[:MAX_STDOUT])
    channel.write(RunResult.model_validate(result).model_dump_json() + "\n")
    channel.flush()


if __name__ == "__main__":
    main()

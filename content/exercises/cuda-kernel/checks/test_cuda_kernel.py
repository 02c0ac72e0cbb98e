"""Hidden checks of the cuda-kernel exercise (a fused bias + GELU in CUDA C and numba).

CPU: kernel.cu is compiled here with gpudojo's compile service (NVRTC; compiling is not
running the learner's code) for sm_80 and sm_90, and run on hidden sizes by gpudojo's CPU
emulator in the learner's sandbox; the numba twin is compiled for a GPU by numba (NVVM) and
launched in numba's CUDA simulator, both in the sandbox, on inputs drawn here;
launch_config is called in the sandbox. Every reference is computed in this process.
GPU: kernel.cu runs with CuPy, ops.fused (checked to launch kernel.cu with a probe kernel)
and bench.py run in the sandbox; the timed calls change their inputs from call to call.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil

import numpy as np
import pytest

from gpudojo.worker.checkkit import fail, requirement

KERNEL = "fused_bias_gelu"
ARCHS = ("sm_80", "sm_90")
MAX_REGISTERS = 32
INV_SQRT2 = 1.0 / math.sqrt(2.0)
RTOL, ATOL = 1e-4, 1e-5  # float32 kernel against a float64 reference
MIN_COPY_FRACTION = 0.5  # effective bandwidth >= half of a device-to-device copy's
MIN_SPEEDUP = 1.2  # and faster than PyTorch's three-kernel expression
# ...with most of its GPU time in kernel.cu's kernel (an output zeroed first by a fill kernel
# still passes; the work done by other kernels, at the timed size or any, does not)
MIN_OWN_KERNEL_SHARE = 0.6

_rng = random.Random()  # seeded from the OS: every check run draws new hidden inputs


# --- shared helpers --------------------------------------------------------------------------


def reference(x: np.ndarray, b: np.ndarray, a: float) -> np.ndarray:
    """GELU(a * x + b) in float64, b broadcast along the last axis."""
    z = a * x.astype(np.float64) + b.astype(np.float64)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * z * (1.0 + erf(z * INV_SQRT2))


def first_mismatch(got: np.ndarray, want: np.ndarray) -> tuple[int, int | None]:
    """(number of wrong elements, flat index of the first), NaN (never written) counting as wrong."""
    got, want = got.reshape(-1), want.reshape(-1)
    bad = ~np.isclose(got, want, rtol=RTOL, atol=ATOL)
    bad |= np.isnan(got)
    idx = np.flatnonzero(bad)
    return int(idx.size), (int(idx[0]) if idx.size else None)


@pytest.fixture(scope="session")
def kernel_service(tmp_path_factory):
    """gpudojo's compile service with its cache in this check's scratch folder (never the
    user's data dir). Its worker process is stopped when the session ends."""
    from gpudojo.kernels.service import KernelService

    svc = KernelService(tmp_path_factory.mktemp("kernel-cache"))
    yield svc
    svc.close()


_compiled: dict[tuple[str, str], object] = {}


def compile_kernel(svc, source: str, arch: str):
    """The compile report of kernel.cu for one arch (cached for this check run)."""
    from gpudojo.kernels.models import CompileRequest
    from gpudojo.kernels.service import CompileFailure

    key = (source, arch)
    if key not in _compiled:
        try:
            _compiled[key] = svc.compile(CompileRequest(source=source, language="cuda", arch=arch, sass=False))
        except CompileFailure as err:
            fail(f"the check could not compile kernel.cu on this machine ({err}); this is not your code's fault.")
    return _compiled[key]


def compile_errors(report, arch: str) -> str:
    errors = [d for d in report.diagnostics if d.severity == "error"]
    shown = "; ".join(
        (f"line {d.line}: {d.message}" if d.line else d.message) for d in (errors or report.diagnostics)[:5]
    )
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return f"kernel.cu does not compile for {arch}: {shown or report.log[-400:]}{more}"


def entry_body(ptx: str, name: str) -> str | None:
    """The PTX text of the .entry named ``name`` (up to the next .entry), or None."""
    m = re.search(rf"\.entry\s+{re.escape(name)}\s*\(", ptx)
    if not m:
        return None
    nxt = re.search(r"\.entry\s+\w+\s*\(", ptx[m.end() :])
    return ptx[m.end() : m.end() + nxt.start()] if nxt else ptx[m.end() :]


def memory_ops(body: str) -> tuple[int, int]:
    """(global loads, global stores) in a PTX entry body."""
    loads = len(re.findall(r"^\s*(?:@!?%p\d+\s+)?ld\.global", body, re.M))
    stores = len(re.findall(r"^\s*(?:@!?%p\d+\s+)?st\.global", body, re.M))
    return loads, stores


def learner_kernel(learner, kernel_service, figures, arch: str):
    """Compile kernel.cu for arch; fail on errors or a missing entry; the report and the entry's PTX."""
    source = learner.require("kernel.cu").read_text(encoding="utf-8", errors="replace")
    report = compile_kernel(kernel_service, source, arch)
    if not report.ok:
        fail(compile_errors(report, arch))
    kernel = next((k for k in report.kernels if k.symbol == KERNEL), None)
    body = entry_body(report.ptx, KERNEL)
    if kernel is None or body is None:
        names = ", ".join(k.symbol for k in report.kernels) or "none"
        fail(
            f"kernel.cu compiles for {arch} but has no kernel with the symbol {KERNEL} (kernels found: {names}). "
            f'Declare it extern "C" __global__ void {KERNEL}(...), so ops.py can find it by name.'
        )
    return report, kernel, body


def require_work(body: str, arch: str, figures, before: str = "") -> None:
    loads, stores = memory_ops(body)
    figures.add(f"global loads in the PTX ({arch})", loads)
    figures.add(f"global stores in the PTX ({arch})", stores)
    if stores == 0 or loads < 2:
        fail(
            f"{before}{KERNEL} compiles for {arch}, but its PTX has {loads} global load(s) and {stores} global "
            "store(s): the kernel must read x and b and write y. Its body is still the TODO."
        )


# --- CPU requirements ------------------------------------------------------------------------


@requirement("compiles")
def test_compiles(learner, kernel_service, figures):
    for arch in ARCHS:
        report, _, body = learner_kernel(learner, kernel_service, figures, arch)
        warnings = [d for d in report.diagnostics if d.severity == "warning"]
        figures.add(f"compile warnings ({arch})", len(warnings), note="; ".join(d.message for d in warnings[:3]))
        require_work(body, arch, figures)


@requirement("registers")
def test_registers(learner, kernel_service, figures):
    problems = []
    for arch in ARCHS:
        _, kernel, body = learner_kernel(learner, kernel_service, figures, arch)
        require_work(body, arch, figures, before="A register count means something once the kernel does its work: ")
        figures.add(f"registers per thread ({arch})", kernel.registers, "registers", f"limit {MAX_REGISTERS}")
        figures.add(f"spill stores ({arch})", kernel.spill_stores_bytes, "bytes")
        figures.add(f"spill loads ({arch})", kernel.spill_loads_bytes, "bytes")
        figures.add(f"theoretical occupancy at 256 threads/block ({arch})", kernel.occupancy.occupancy)
        if kernel.registers > MAX_REGISTERS:
            problems.append(
                f"{arch}: {kernel.registers} registers per thread, more than {MAX_REGISTERS} "
                "(an element-wise kernel needs few: unroll less, or keep fewer values live at once)"
            )
        if kernel.spill_stores_bytes or kernel.spill_loads_bytes:
            problems.append(
                f"{arch}: {kernel.spill_stores_bytes} bytes of spill stores and {kernel.spill_loads_bytes} of "
                "spill loads to local memory"
            )
    if problems:
        fail("; ".join(problems) + ".")


# --- running the learner's code: isolated drivers ----------------------------------------------

# Every driver runs as `python -I -` in the learner's sandbox: -I keeps the learner's folder off
# sys.path while the driver imports numpy, numba and gpudojo (a numpy.py or numba/ planted there
# shadows nothing), and the driver appends the folder only when it imports the learner's modules.
LEARNER_PATH = "import os as _os, sys as _sys\n_sys.path.append(_os.getcwd())\n"


def drive(learner, driver: str, *args: str, timeout_s: float, env=None, cwd=None):
    """Run ``driver`` (Python source, on stdin) isolated from the learner's folder on sys.path."""
    return learner.run(["python", "-I", "-", *args], stdin=driver, timeout_s=timeout_s, env=env, cwd=cwd)


# The fingerprint of a kernel's Python code (bytecode, names, constants, nested code): the same
# function compiled for a GPU and run in the simulator has the same one in both processes.
FINGERPRINT = r"""
import hashlib as _hashlib, types as _types
def _fingerprint(code):
    parts = [code.co_code.hex(), repr(code.co_names), repr(code.co_varnames), repr(code.co_freevars),
             repr(code.co_cellvars)]
    parts += [_fingerprint(c) if isinstance(c, _types.CodeType) else repr(c) for c in code.co_consts]
    return _hashlib.sha256("|".join(parts).encode()).hexdigest()
"""

# 1. The real numba CUDA target (no simulator): the kernel must be what @cuda.jit makes, and
# numba must compile it for a GPU (NVVM, no GPU needed) with the argument types the hidden
# launches pass. The simulator runs any Python; a GPU does not.
NUMBA_COMPILE_DRIVER = (
    r"""
import json, sys, traceback, types
from numba import cuda, float32, float64, int64
from numba.cuda.dispatcher import CUDADispatcher
_compile_ptx, _dumps, _out, _jit = cuda.compile_ptx, json.dumps, sys.stdout, cuda.jit

def _lazy_jit(func_or_sig=None, *args, **kwargs):
    # @cuda.jit("void(float32[:], ...)") compiles at import, for the GPU of this machine: with
    # none, the import would fail. The signature is dropped (the check compiles with its own).
    if func_or_sig is not None and not callable(func_or_sig):
        return _jit(*args, **kwargs)
    return _jit(func_or_sig, *args, **kwargs)

cuda.jit = _lazy_jit
"""
    + FINGERPRINT
    + LEARNER_PATH
    + r"""
def say(d):
    _out.write("\n" + _dumps(d) + "\n")
    _out.flush()
    sys.exit(0)
try:
    import kernel_numba
    kernel = kernel_numba.fused_bias_gelu
except Exception as err:
    say({"import_error": "".join(traceback.format_exception_only(type(err), err)).strip()[-800:]})
kind = type(kernel).__module__ + "." + type(kernel).__qualname__
func = getattr(kernel, "py_func", None)
if not isinstance(kernel, CUDADispatcher) or not isinstance(func, types.FunctionType):
    say({"not_kernel": kind})
if getattr(kernel, "targetoptions", {}).get("device"):
    say({"device_function": kind})
sig = (float32[::1], float32[::1], float32[::1], float64, int64, int64)
try:
    ptx, _ = _compile_ptx(func, sig, cc=(8, 0))
except Exception as err:
    say({"compile_error": "".join(traceback.format_exception_only(type(err), err)).strip()})
say({"ok": True, "fingerprint": _fingerprint(func.__code__), "ptx_lines": ptx.count("\n")})
"""
)

# 2. The same kernel in the simulator, launched on the hidden cases. The simulator's classes are
# taken (and their attributes noted) before the learner's module is imported.
NUMBA_SIM_DRIVER = (
    r"""
import json, sys, threading as _threading, traceback
import numpy as np
from numba import cuda
import numba.cuda.simulator.kernel as _simk
from numba.cuda.simulator.kernel import FakeCUDAKernel
_dumps, _out, _array, _full, _nan, _f32 = json.dumps, sys.stdout, np.array, np.full, np.nan, np.float32
# The launch machinery (the class's attributes, the module's functions and classes), not data.
_before = {"FakeCUDAKernel": dict(vars(FakeCUDAKernel)),
           "simulator": {k: v for k, v in vars(_simk).items() if callable(v)}}
cases = json.loads(CASES_JSON)
"""
    + FINGERPRINT
    + LEARNER_PATH
    + r"""
def say(d):
    _out.write("\n" + _dumps(d) + "\n")
    _out.flush()
    sys.exit(0)
def tampered():
    now = {"FakeCUDAKernel": vars(FakeCUDAKernel), "simulator": vars(_simk)}
    return sorted(f"{where}.{name}" for where, seen in _before.items() for name, value in seen.items()
                  if now[where].get(name, None) is not value)
try:
    import kernel_numba
    kernel = kernel_numba.fused_bias_gelu
except Exception as err:
    say({"import_error": "".join(traceback.format_exception_only(type(err), err)).strip()[-800:]})
if type(kernel) is not FakeCUDAKernel or kernel._device:
    say({"not_kernel": type(kernel).__module__ + "." + type(kernel).__qualname__})
if tampered():
    say({"tampered": tampered()})
# A thread left running by the import could change the simulator while the kernel runs.
_threads = [t.name for t in _threading.enumerate() if t is not _threading.main_thread()]
if _threads:
    say({"threads": _threads})
fingerprint = _fingerprint(kernel.py_func.__code__)
out = []
for c in cases:
    n, cols = c["rows"] * c["cols"], c["cols"]
    x = _array(c["x"], dtype=_f32)
    b = _array(c["b"], dtype=_f32)
    y = _full(n, _nan, dtype=_f32)
    try:
        kernel[c["grid"], c["block"]](x, b, y, float(c["a"]), n, cols)
        out.append({"y": [None if v != v else float(v) for v in y]})
    except IndexError as err:
        out.append({"out_of_range": str(err)})
    except Exception as err:
        out.append({"error": "".join(traceback.format_exception_only(type(err), err)).strip()[-800:]})
say({"results": out, "fingerprint": fingerprint, "tampered": tampered()})
"""
)

NVVM_MISSING = re.compile(r"libNVVM|NVVM.*(?:not found|cannot be found|could not be found)|nvvm.*\.so", re.I)


def numba_cases() -> list[dict]:
    """Hidden launches: n = rows * cols never a multiple of the block, one smaller than a block."""
    cases = []
    for rows_range, block in (((5, 17), _rng.choice((64, 96, 128))), ((1, 1), 32), ((3, 11), _rng.choice((64, 128)))):
        while True:
            rows = _rng.randint(*rows_range)
            cols = _rng.randint(3, 31) if rows == 1 else _rng.randint(17, 61)
            if (rows * cols) % block:
                break
        n = rows * cols
        cases.append(
            {
                "rows": rows,
                "cols": cols,
                "block": block,
                "grid": (n + block - 1) // block,
                "a": round(_rng.uniform(0.25, 2.0), 3),
                "x": [round(_rng.gauss(0.0, 2.0), 4) for _ in range(n)],
                "b": [round(_rng.gauss(0.0, 1.0), 4) for _ in range(cols)],
            }
        )
    return cases


def out_of_range_message(err: str, launch: str, n: int, threads: int, block: int) -> str:
    """Explain the simulator's IndexError: a spare thread past n, or a wrong index inside n."""
    head = f"with {launch}, your kernel read or wrote outside an array in the simulator: {err}."
    m = re.search(r"tid=\[(\d+).*?ctaid=\[(\d+).*?index (-?\d+) is out of bounds for axis 0 with size (\d+)", err)
    if m:
        tid, ctaid, index, size = (int(v) for v in m.groups())
        i = ctaid * block + tid
        if i < n:
            return (
                f"{head} Thread {i} has an element (i < n = {n}), but indexed an array of {size} elements at "
                f"{index}: check the index arithmetic (b has one value per column)."
            )
    return (
        f"{head} Threads {n} to {threads - 1} have no element; the bounds check must stop them before they "
        "touch x, b or y."
    )


def not_a_kernel(kind: str) -> str:
    return (
        f"kernel_numba.fused_bias_gelu is a {kind}, not a numba CUDA kernel. Keep the function and its "
        "@cuda.jit decorator (from numba import cuda): the check compiles it for a GPU with numba and launches "
        "it in numba's CUDA simulator, so nothing else can stand in for it."
    )


def compile_numba_twin(learner, figures) -> str:
    """Compile the learner's numba kernel for a GPU with numba (no simulator); its fingerprint."""
    res = drive(learner, NUMBA_COMPILE_DRIVER, timeout_s=120, env={"NUMBA_ENABLE_CUDASIM": "0"})
    if res.returncode != 0:
        fail(f"importing kernel_numba.py with numba failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if not isinstance(out, dict):
        fail(f"importing kernel_numba.py with numba printed no result: {res.tail()}")
    if "import_error" in out:
        fail(f"kernel_numba.py could not be imported, or has no fused_bias_gelu kernel: {out['import_error']}")
    if "not_kernel" in out:
        fail(not_a_kernel(out["not_kernel"]))
    if "device_function" in out:
        fail(
            "kernel_numba.fused_bias_gelu is a device function (@cuda.jit(device=True)); it must be a kernel, "
            "@cuda.jit with no device=True, so that it can be launched with [grid, block]."
        )
    if "compile_error" in out:
        err = out["compile_error"]
        if NVVM_MISSING.search(err):
            fail(f"the check could not load NVVM, numba's CUDA compiler ({err[-300:]}); this is not your code's fault.")
        lines = [line for line in err.splitlines() if line.strip() and "<source elided>" not in line]
        shown = "\n".join(lines if len(lines) <= 12 else [*lines[:6], "...", *lines[-6:]])[-1500:]
        fail(
            "numba cannot compile kernel_numba.py's fused_bias_gelu for a GPU (sm_80), with float32 arrays x, b and "
            "y, a float a and integers n and cols:\n"
            f"{shown}\n"
            "The simulator runs any Python, a GPU does not: a kernel indexes arrays element by element, does "
            "arithmetic and calls math functions; NumPy calls on whole arrays and Python objects do not compile."
        )
    figures.add("compiled for a GPU by numba", "sm_80", note=f"{out['ptx_lines']} lines of PTX")
    return out["fingerprint"]


@requirement("bounds-check")
def test_bounds_check_in_simulator(learner, figures):
    learner.require("kernel_numba.py")
    fingerprint = compile_numba_twin(learner, figures)
    cases = numba_cases()
    driver = NUMBA_SIM_DRIVER.replace("CASES_JSON", repr(json.dumps(cases)))
    res = drive(learner, driver, timeout_s=90, env={"NUMBA_ENABLE_CUDASIM": "1"})
    if res.returncode != 0:
        fail(f"running kernel_numba.py in the simulator failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if not isinstance(out, dict):
        fail(f"running kernel_numba.py in the simulator printed no result: {res.tail()}")
    if "import_error" in out:
        fail(f"kernel_numba.py could not be imported, or has no fused_bias_gelu kernel: {out['import_error']}")
    if "not_kernel" in out:
        fail(not_a_kernel(out["not_kernel"]))
    if out.get("threads"):
        fail(
            f"kernel_numba.py left threads running when it was imported ({', '.join(out['threads'][:3])}); the "
            "check launches your kernel in the simulator alone, so the module must define the kernel and nothing more."
        )
    if out.get("tampered"):
        fail(
            f"kernel_numba.py changed numba's CUDA simulator ({', '.join(out['tampered'][:4])}) when it was "
            "imported or run; the check launches your kernel in the simulator as numba ships it."
        )
    if out.get("fingerprint") != fingerprint:
        fail(
            "kernel_numba.py defines a different fused_bias_gelu in the simulator than the one numba compiles for "
            "a GPU; the check runs one kernel in both, so write one (no branch on NUMBA_ENABLE_CUDASIM)."
        )
    for case, got in zip(cases, out["results"], strict=True):
        n = case["rows"] * case["cols"]
        threads = case["grid"] * case["block"]
        launch = (
            f"n = {n} ({case['rows']} rows x {case['cols']} columns), {case['grid']} block(s) of "
            f"{case['block']} threads = {threads} threads"
        )
        figures.add("elements / threads launched", f"{n} / {threads}")
        if "out_of_range" in got:
            fail(out_of_range_message(got["out_of_range"], launch, n, threads, case["block"]))
        if "error" in got:
            fail(f"with {launch}, the kernel raised in the simulator: {got['error']}")
        y = np.array([np.nan if v is None else v for v in got["y"]], dtype=np.float64)
        want = reference(
            np.array(case["x"], dtype=np.float32).reshape(case["rows"], case["cols"]),
            np.array(case["b"], dtype=np.float32),
            case["a"],
        ).reshape(-1)
        wrong, i = first_mismatch(y, want)
        figures.add("max |error| vs float64 reference", float(np.nanmax(np.abs(y - want))) if wrong < n else None)
        if wrong:
            r, c = divmod(i, case["cols"])
            shown = "never written" if np.isnan(y[i]) else f"{y[i]:.6g}"
            fail(
                f"with {launch}, {wrong} of {n} outputs are wrong; the first is y[{i}] (row {r}, column {c}): "
                f"{shown}, expected GELU({case['a']} * x[{i}] + b[{c}]) = {want[i]:.6g}."
            )


# kernel.cu itself, run on hidden sizes: without a GPU by gpudojo's CPU emulator (g++ and a
# header of ours, each block's threads as fibers, every array between guard pages), on a GPU
# with CuPy. Both run in the learner's sandbox; the inputs are drawn here and the float64
# reference never leaves this process.
EMULATOR_DRIVER = r"""
import json, os, sys, traceback
import numpy as np
from gpudojo.kernels.cpu_runner.execute import EmulatorError, run_emulated
from gpudojo.kernels.models import RunRequest
data = np.load(sys.argv[1])
meta = json.loads(sys.argv[2])
source = open("kernel.cu", encoding="utf-8", errors="replace").read()
cache = os.path.join(os.environ.get("TMPDIR") or "/tmp", "gpudojo-emulator")
results, outs = [], {}
for k, case in enumerate(meta):
    x, b = data[f"x{k}"].reshape(-1), data[f"b{k}"]
    n, cols = x.size, b.size
    req = RunRequest.model_validate({
        "source": source, "kernel": "fused_bias_gelu", "grid": [case["grid"]], "block": [case["block"]],
        "mode": "cpu-emulation", "arch": "sm_80",
        "args": [
            {"kind": "array", "name": "x", "dtype": "float32", "shape": [n]},
            {"kind": "array", "name": "b", "dtype": "float32", "shape": [cols]},
            {"kind": "array", "name": "y", "dtype": "float32", "shape": [n], "output": True},
            {"kind": "scalar", "name": "a", "dtype": "float32", "value": case["a"]},
            {"kind": "scalar", "name": "n", "dtype": "int32", "value": n},
            {"kind": "scalar", "name": "cols", "dtype": "int32", "value": cols},
        ],
    })
    inputs = {"x": x.copy(), "b": b.copy(), "y": np.full(n, np.nan, dtype=np.float32),
              "a": np.float32(case["a"]), "n": np.int32(n), "cols": np.int32(cols)}
    try:
        got, _, _, facts = run_emulated(req, inputs, __import__("pathlib").Path(cache), 30.0, 120.0)
    except EmulatorError as err:
        results.append({"error": err.error})
        break
    except Exception as err:
        why = "".join(traceback.format_exception_only(type(err), err))
        results.append({"error": {"kind": "exception", "message": why}})
        break
    outs[f"y{k}"] = got["y"]
    results.append({
        "compile_ms": facts["compile_ms"], "run_ms": facts["run_ms"],
        "writers": next((w for w in (facts.get("memory") or {}).get("writers", []) if w["array"] == "y"), None)
        if "memory" in facts else "not measured",
        "inputs_changed": not (np.array_equal(got["x"].view(np.uint32), x.view(np.uint32))
                               and np.array_equal(got["b"].view(np.uint32), b.view(np.uint32))),
    })
np.savez(sys.argv[3], **outs)
print(json.dumps({"results": results}))
"""

# On a GPU: kernel.cu compiled by CuPy (NVRTC), launched on arrays followed by guard elements
# (NaN after x and b, a marker after y), so a thread past n that stores is seen.
CUPY_DRIVER = r"""
import json, sys, traceback
import numpy as np
import cupy as cp
GUARD = 4096
MARK = np.float32(-1.25e30)
data = np.load(sys.argv[1])
meta = json.loads(sys.argv[2])
source = open("kernel.cu", encoding="utf-8", errors="replace").read()
try:
    kernel = cp.RawModule(code=source, options=("-std=c++17",)).get_function("fused_bias_gelu")
except Exception as err:
    print(json.dumps({"results": [{"error": {"kind": "compile_error", "message": str(err)[-1500:]}}]}))
    sys.exit(0)
guard = np.full(GUARD, np.nan, dtype=np.float32)
results, outs = [], {}
for k, case in enumerate(meta):
    x, b = data[f"x{k}"].reshape(-1), data[f"b{k}"]
    n, cols = x.size, b.size
    hx, hb = np.concatenate([x, guard]), np.concatenate([b, guard])
    hy = np.full(n + GUARD, MARK, dtype=np.float32)
    try:
        dx, db, dy = cp.asarray(hx), cp.asarray(hb), cp.asarray(hy)
        kernel((case["grid"],), (case["block"],), (dx, db, dy, np.float32(case["a"]), np.int32(n), np.int32(cols)))
        cp.cuda.Device().synchronize()
        gy, gx, gb = cp.asnumpy(dy), cp.asnumpy(dx), cp.asnumpy(db)
    except Exception as err:
        why = "".join(traceback.format_exception_only(type(err), err))[-1500:]
        results.append({"error": {"kind": "exception", "message": why}})
        break
    past = np.flatnonzero(gy[n:].view(np.uint32) != hy[n:].view(np.uint32))
    outs[f"y{k}"] = gy[:n]
    results.append({
        "written_past_n": int(past.size), "first_past": int(n + past[0]) if past.size else None,
        "inputs_changed": not (np.array_equal(gx.view(np.uint32), hx.view(np.uint32))
                               and np.array_equal(gb.view(np.uint32), hb.view(np.uint32))),
    })
np.savez(sys.argv[3], **outs)
print(json.dumps({"results": results}))
"""


# One thread per element stores once; a kernel that zeroes y[i] first, or stores through a
# helper, stores a few times. A serial loop stores n times in one thread.
MAX_STORES_PER_THREAD = 4


def kernel_cases() -> list[dict]:
    """Hidden launches of kernel.cu: n never a multiple of the block; one launch smaller than a
    block (a missing bounds check reads past x there), one with rows longer than a block."""
    cases = []
    for kind in ("one row", "odd columns", "long rows", "3-D"):
        while True:
            if kind == "one row":
                block = _rng.choice((32, 64))
                shape = (1, _rng.randint(3, block - 3))
            elif kind == "odd columns":
                block = _rng.choice((64, 96, 128))
                shape = (_rng.randint(5, 40), _rng.randrange(101, 301, 2))
            elif kind == "long rows":
                block = _rng.choice((256, 512))
                shape = (_rng.randint(20, 80), _rng.randrange(block + 1, 3 * block, 2))
            else:
                block = _rng.choice((160, 224))
                shape = (_rng.randint(2, 5), _rng.randint(3, 9), _rng.randrange(33, 99, 2))
            n = math.prod(shape)
            if n % block:
                break
        cases.append(
            {"shape": shape, "block": block, "grid": (n + block - 1) // block, "a": round(_rng.uniform(0.25, 2.0), 3)}
        )
    return cases


def kernel_error_message(error: dict, launch: str, n: int, threads: int, block: int) -> str:
    """A launch the emulator (or CuPy) reported as failed, in the learner's terms."""
    kind, message = error.get("kind", "exception"), error.get("message", "").strip()
    if message and message[-1] not in ".!?)":
        message += "."
    where = f" (line {error['line']} of kernel.cu)" if error.get("line") else ""
    if kind == "out_of_bounds":
        thread, blk = error.get("thread") or [0], error.get("block") or [0]
        i = blk[0] * block + thread[0]
        if i >= n:
            return (
                f"with {launch}, kernel.cu read or wrote outside an array{where}: {message} Thread {i} has no "
                f"element (n = {n}): threads {n} to {threads - 1} must return before they touch x, b or y."
            )
        return (
            f"with {launch}, kernel.cu read or wrote outside an array{where}: {message} Thread {i} has an element "
            f"(i < n = {n}), so the index is wrong: check the arithmetic (b has one value per column)."
        )
    if kind == "compile_error":
        return (
            f"kernel.cu compiles with NVRTC but the check could not build it to run it{where}: {message} "
            "(the CPU emulator compiles CUDA C with g++ and a header of gpudojo's)."
        )
    if kind == "bad_spec":
        return f'kernel.cu has no extern "C" kernel {KERNEL} the check can launch: {message}'
    if kind == "timeout":
        return f"with {launch}, kernel.cu did not finish{where}: {message}"
    return f"with {launch}, running kernel.cu failed ({kind}){where}: {message[-1200:]}"


@requirement("kernel-values")
def test_kernel_values(learner, figures, gpus, tmp_path):
    source = learner.require("kernel.cu").read_text(encoding="utf-8", errors="replace")
    if re.search(r"\bfused_bias_gelu\b", source) is None:
        fail(f'kernel.cu has no kernel named {KERNEL}: declare it extern "C" __global__ void {KERNEL}(...).')
    if not gpus:
        from gpudojo.kernels.cpu_runner.build import find_compiler

        if find_compiler() is None:
            fail(
                "no C++ compiler here: gpudojo runs CUDA C without a GPU by compiling it with g++ (or clang++). "
                "Install g++ (Debian/Ubuntu: apt install g++); this is not your code's fault."
            )
    cases = kernel_cases()
    gen = np.random.default_rng(_rng.randrange(1 << 62))
    arrays = {}
    for k, case in enumerate(cases):
        arrays[f"x{k}"] = (gen.standard_normal(case["shape"]) * 2.0).astype(np.float32)
        arrays[f"b{k}"] = gen.standard_normal(case["shape"][-1]).astype(np.float32)
    inputs, outputs = tmp_path / "kernel-inputs.npz", tmp_path / "kernel-outputs.npz"
    np.savez(inputs, **arrays)
    meta = [{"grid": c["grid"], "block": c["block"], "a": c["a"]} for c in cases]
    driver, how = (CUPY_DRIVER, "CuPy on the GPU") if gpus else (EMULATOR_DRIVER, "gpudojo's CPU emulator")
    figures.add("run by", how, note="" if gpus else "CPU emulation: results are exact, times are not a GPU's")
    res = drive(learner, driver, str(inputs), json.dumps(meta), str(outputs), timeout_s=180)
    if gpus:
        require_cuda_stack(res)
    if res.returncode != 0:
        fail(f"running kernel.cu on the hidden sizes failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if not isinstance(out, dict) or not isinstance(out.get("results"), list):
        fail(f"running kernel.cu on the hidden sizes printed no result: {res.tail()}")
    got = np.load(outputs) if outputs.exists() else {}
    for k, case in enumerate(cases):
        shape, block, grid = case["shape"], case["block"], case["grid"]
        n, threads = math.prod(shape), case["grid"] * case["block"]
        launch = (
            f"x of shape {' x '.join(map(str, shape))} (n = {n}, {shape[-1]} columns), {grid} block(s) of {block} "
            f"threads = {threads} threads, a = {case['a']}"
        )
        if k >= len(out["results"]):
            fail(f"kernel.cu stopped before the launch with {launch} ran")
        info = out["results"][k]
        if "error" in info:
            fail(kernel_error_message(info["error"], launch, n, threads, block))
        figures.add("elements / threads launched", f"{n} / {threads}", note=f"block {block}")
        if "run_ms" in info:
            figures.add("emulated launch", info["run_ms"], "ms", "wall clock on the CPU, not GPU time")
        if info.get("written_past_n"):
            fail(
                f"with {launch}, kernel.cu wrote {info['written_past_n']} element(s) of y past its end (the first at "
                f"index {info['first_past']}): threads {n} to {threads - 1} have no element and must return before "
                "they touch x, b or y."
            )
        if info.get("inputs_changed"):
            fail(f"with {launch}, kernel.cu changed x or b; it must write only y")
        if f"y{k}" not in got or got[f"y{k}"].size != n:
            fail(f"with {launch}, running kernel.cu gave no output y of {n} elements")
        # One thread per element: the emulator counts, in every block, which threads stored to y.
        # A loop in one thread (or in one thread per block) writes the right values too, and only a
        # GPU's clock would see it; here the count does.
        who = info.get("writers")
        if who == "not measured":
            figures.add("threads that wrote y", None, note="not counted: the emulator ran without its access report")
        elif who is not None:
            figures.add(
                "threads that wrote y",
                f"{who['threads']} of {n}",
                note=f"at most {who['max_per_thread']} store(s) by one thread",
            )
            if who["threads"] < n or who["max_per_thread"] > MAX_STORES_PER_THREAD:
                fail(
                    f"with {launch}, y's {n} elements were stored by {who['threads']} thread(s), one of them storing "
                    f"{who['max_per_thread']} time(s): the launch has a thread for every element, and each thread "
                    "computes and stores its own y[i] (i = blockIdx.x * blockDim.x + threadIdx.x). A loop over "
                    "elements in one thread gives the right values but runs serially on the GPU."
                )
        y = got[f"y{k}"].astype(np.float64).reshape(-1)
        want = reference(arrays[f"x{k}"], arrays[f"b{k}"], case["a"]).reshape(-1)
        wrong, i = first_mismatch(y, want)
        figures.add("max |error| vs float64 reference", float(np.nanmax(np.abs(y - want))) if wrong < n else None)
        if wrong:
            r, c = divmod(i, shape[-1])
            shown = "never written" if np.isnan(y[i]) else f"{y[i]:.6g}"
            fail(
                f"with {launch}, {wrong} of {n} outputs of kernel.cu are wrong; the first is y[{i}] (row {r}, "
                f"column {c}): {shown}, expected GELU({case['a']} * x[{i}] + b[{c}]) = {want[i]:.6g} "
                f"(x[{i}] = {arrays[f'x{k}'].reshape(-1)[i]:.6g}, b[{c}] = {arrays[f'b{k}'][c]:.6g})."
            )


LAUNCH_DRIVER = (
    r"""
import json, sys, traceback
"""
    + LEARNER_PATH
    + r"""
try:
    import ops
except Exception as err:
    print(json.dumps({"import_error": "".join(traceback.format_exception_only(type(err), err)).strip()}))
    sys.exit(0)
out = []
for n in json.loads(sys.argv[1]):
    try:
        out.append({"n": n, "config": list(ops.launch_config(n))})
    except Exception as err:
        out.append({"n": n, "error": f"{type(err).__name__}: {err}"})
print(json.dumps({"results": out}))
"""
)


@requirement("launch-config")
def test_launch_config(learner, figures):
    learner.require("ops.py")
    ns = [
        1,
        31,
        32,
        33,
        1025,
        _rng.randrange(1001, 99_999, 2),
        (1 << 20) + _rng.randrange(1, 999),
        (1 << 24) + 1,
        100_000_007,
        2**31 - 1,
    ]
    res = drive(learner, LAUNCH_DRIVER, json.dumps(ns), timeout_s=60)
    if res.returncode != 0:
        fail(f"calling ops.launch_config failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if "import_error" in out:
        fail(
            f"ops.py could not be imported on this machine: {out['import_error']}. Import cupy inside the "
            "functions that launch the kernel, not at the top of the module, so launch_config works without a GPU."
        )
    for item in out["results"]:
        n = item["n"]
        if "error" in item:
            fail(f"launch_config({n}) raised {item['error']}")
        cfg = item["config"]
        if len(cfg) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in cfg):
            fail(f"launch_config({n}) returned {cfg!r}; it must return two ints, (grid, block)")
        grid, block = cfg
        if n == ns[-1]:
            figures.add("launch_config(2**31 - 1)", f"grid {grid}, block {block}")
        if block % 32 or not 32 <= block <= 1024:
            fail(
                f"launch_config({n}) returned block = {block}: a block must be a whole number of warps "
                "(a multiple of 32) and at most 1024 threads, the CUDA limit."
            )
        if grid * block < n:
            fail(
                f"launch_config({n}) returned grid {grid} x block {block} = {grid * block} threads, fewer than the "
                f"{n} elements: the last {n - grid * block} would never be computed. Round the grid up."
            )
        if grid > 2**31 - 1:
            fail(f"launch_config({n}) returned grid = {grid}; a 1-D grid has at most 2**31 - 1 blocks")
        if (grid - 1) * block >= n:
            fail(
                f"launch_config({n}) returned grid {grid} x block {block}: at least one whole block has no element "
                f"to work on. {math.ceil(n / block)} blocks of {block} cover n."
            )
    figures.add("sizes tried", len(ns))


# --- GPU requirements ------------------------------------------------------------------------
# --- GPU requirements ------------------------------------------------------------------------

MATCH_DRIVER = (
    r"""
import json, sys, traceback
import numpy as np
import torch
data = np.load(sys.argv[1])
meta = json.loads(sys.argv[2])
"""
    + LEARNER_PATH
    + r"""
try:
    import ops
except Exception as err:
    why = "".join(traceback.format_exception_only(type(err), err)).strip()
    print(json.dumps({"error": "importing ops.py: " + why}))
    sys.exit(0)
outs, info = {}, []
for k, case in enumerate(meta):
    x = torch.from_numpy(data[f"x{k}"]).cuda()
    if case["transposed"]:
        x = x.t().contiguous().t()  # same values, a non-contiguous view
    b = torch.from_numpy(data[f"b{k}"]).cuda()
    x0, b0 = x.clone(), b.clone()
    try:
        y = ops.fused(x, b, case["a"])
        torch.cuda.synchronize()
    except Exception as err:
        info.append({"error": "".join(traceback.format_exception(type(err), err, err.__traceback__))[-1500:]})
        break
    d = {"type": type(y).__module__ + "." + type(y).__name__}
    if isinstance(y, torch.Tensor):
        d.update(device=str(y.device), dtype=str(y.dtype), shape=list(y.shape),
                 inputs_changed=not (torch.equal(x, x0) and torch.equal(b, b0)))
        outs[f"y{k}"] = y.detach().float().cpu().numpy()
    info.append(d)
np.savez(sys.argv[3], **outs)
print(json.dumps({"cases": info}))
"""
)

# ops.fused must launch the kernel of kernel.cu, not compute the expression some other way
# (torch, torch.compile, a kernel of its own): in a copy of the learner's folder, kernel.cu is
# replaced by this probe, which computes something else, and ops.fused must return what it computes.
PROBE_KERNEL = r"""// The check's probe: the same signature as fused_bias_gelu, a different computation.
extern "C" __global__ void fused_bias_gelu(const float* __restrict__ x, const float* __restrict__ b,
                                           float* __restrict__ y, float a, int n, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] - 2.0f * b[i % cols] + 3.0f;
}
"""
PROBE_DRIVER = (
    r"""
import json, sys, traceback
import numpy as np
import torch
data = np.load(sys.argv[1])
a = float(sys.argv[2])
"""
    + LEARNER_PATH
    + r"""
try:
    import ops
    y = ops.fused(torch.from_numpy(data["x"]).cuda(), torch.from_numpy(data["b"]).cuda(), a)
    torch.cuda.synchronize()
    np.save(sys.argv[3], y.detach().float().cpu().numpy())
    print(json.dumps({"ok": True}))
except Exception as err:
    print(json.dumps({"error": "".join(traceback.format_exception_only(type(err), err)).strip()[-800:]}))
"""
)


def require_cuda_stack(res) -> None:
    text = res.stderr + res.stdout
    if "No module named 'cupy'" in text:
        fail("CuPy is not installed, so ops.py cannot launch kernel.cu: pip install 'gpudojo[gpu]' (cupy-cuda13x).")


def require_probe(learner, figures, tmp_path) -> None:
    """ops.fused, in a copy of the learner's folder whose kernel.cu is the probe, returns the probe's values."""
    probe = tmp_path / "probe"
    shutil.copytree(learner.dir, probe, ignore=shutil.ignore_patterns("__pycache__"))
    (probe / "kernel.cu").write_text(PROBE_KERNEL, encoding="utf-8")
    shape = (_rng.randint(3, 40), _rng.randrange(65, 999, 2))
    gen = np.random.default_rng(_rng.randrange(1 << 62))
    x = gen.standard_normal(shape).astype(np.float32)
    b = gen.standard_normal(shape[-1]).astype(np.float32)
    a = round(_rng.uniform(0.25, 2.0), 3)
    np.savez(tmp_path / "probe-inputs.npz", x=x, b=b)
    res = drive(
        learner,
        PROBE_DRIVER,
        str(tmp_path / "probe-inputs.npz"),
        str(a),
        str(tmp_path / "probe-y.npy"),
        timeout_s=180,
        cwd=probe,
    )
    require_cuda_stack(res)
    out = res.json() if res.returncode == 0 else None
    what = (
        "The check copied your folder and replaced kernel.cu with a probe kernel of the same signature that "
        "computes a * x - 2 * b + 3"
    )
    if not isinstance(out, dict) or "error" in out:
        why = out["error"] if isinstance(out, dict) else res.tail()
        fail(f"{what}; ops.fused then failed: {why}. ops.py must compile and launch the kernel in kernel.cu.")
    y = np.load(tmp_path / "probe-y.npy").astype(np.float64)
    want = a * x.astype(np.float64) - 2.0 * b.astype(np.float64) + 3.0
    same = y.shape == want.shape and bool(np.allclose(y, want, rtol=1e-5, atol=1e-5))
    figures.add("ops.fused runs kernel.cu", "yes" if same else "no", note="checked with a probe kernel")
    if not same:
        fail(
            f"{what}, and ops.fused did not return what the probe computes: it does not run kernel.cu. ops.fused "
            "must compile kernel.cu (ops._kernel) and launch fused_bias_gelu, not compute GELU another way."
        )


@requirement("matches-reference")
def test_matches_reference(learner, figures, tmp_path):
    learner.require("ops.py")
    learner.require("kernel.cu")
    shapes = [
        (1, 1),
        (_rng.randint(2, 60), _rng.randrange(101, 301, 2)),
        (3, _rng.randint(2, 9), _rng.randrange(33, 99, 2)),
        (_rng.randrange(1001, 1201, 2), _rng.randrange(601, 1001, 2)),
        (_rng.randint(40, 90), 4096),
    ]
    gen = np.random.default_rng(_rng.randrange(1 << 62))
    meta, arrays = [], {}
    for k, shape in enumerate(shapes):
        arrays[f"x{k}"] = (gen.standard_normal(shape) * 2.0).astype(np.float32)
        arrays[f"b{k}"] = gen.standard_normal(shape[-1]).astype(np.float32)
        meta.append({"a": round(_rng.uniform(0.25, 2.0), 3), "transposed": k == 3})
    inputs, outputs = tmp_path / "inputs.npz", tmp_path / "outputs.npz"
    np.savez(inputs, **arrays)
    res = drive(learner, MATCH_DRIVER, str(inputs), json.dumps(meta), str(outputs), timeout_s=180)
    require_cuda_stack(res)
    if res.returncode != 0:
        fail(f"calling ops.fused on CUDA tensors failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if not isinstance(out, dict):
        fail(f"calling ops.fused on CUDA tensors printed no result: {res.tail()}")
    if "error" in out:
        fail(out["error"])
    got = np.load(outputs)
    for k, (shape, case, info) in enumerate(zip(shapes, meta, out["cases"], strict=False)):
        what = f"x of shape {tuple(shape)}{' (a non-contiguous view)' if case['transposed'] else ''}, a = {case['a']}"
        if "error" in info:
            fail(f"ops.fused raised on {what}: {info['error'][-700:]}")
        if info["type"] != "torch.Tensor":
            fail(f"ops.fused returned a {info['type']} for {what}; it must return a torch tensor")
        if not info["device"].startswith("cuda") or info["dtype"] != "torch.float32" or info["shape"] != list(shape):
            fail(
                f"ops.fused returned a {info['dtype']} tensor of shape {tuple(info['shape'])} on {info['device']} "
                f"for {what}; expected float32 of shape {tuple(shape)} on the GPU"
            )
        if info["inputs_changed"]:
            fail(f"ops.fused changed its inputs x or b ({what}); it must write only its new output tensor")
        want = reference(arrays[f"x{k}"], arrays[f"b{k}"], case["a"])
        y = got[f"y{k}"]
        wrong, i = first_mismatch(y, want)
        err = float(np.nanmax(np.abs(y.astype(np.float64) - want))) if wrong < y.size else float("nan")
        figures.add(f"max |error|, shape {tuple(shape)}", err)
        if wrong:
            idx = np.unravel_index(i, shape)
            fail(
                f"ops.fused is wrong at {wrong} of {y.size} elements for {what}; the first is y{list(idx)} = "
                f"{y.reshape(-1)[i]:.6g}, expected {want.reshape(-1)[i]:.6g}"
            )
    if len(out["cases"]) < len(shapes):
        fail("ops.fused stopped before every case ran")
    require_probe(learner, figures, tmp_path)


# The timed calls change their inputs every call (two x tensors in turn, a different a each
# time), so that no result can be reused; a few results picked at random are checked after the
# timing. The profiler then says which kernels one ops.fused call runs on the GPU.
MEASURE_DRIVER = (
    r"""
import json, random, statistics, sys
import torch
rows, cols, a0, seed = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
"""
    + LEARNER_PATH
    + r"""
import ops

WARMUP, REPEATS, INNER = 3, 15, 10
def a_of(k):
    return a0 + 0.001 * (k % 97)

def time_ms(fn, keep=(), kept=None):
    k = 0
    for _ in range(WARMUP):
        fn(k)
        k += 1
    torch.cuda.synchronize()
    ts = []
    for _ in range(REPEATS):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(INNER):
            y = fn(k)
            if k in keep:
                kept[k] = y
            k += 1
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / INNER)
    return statistics.median(ts)

g = torch.Generator(device="cuda").manual_seed(seed)
xs = [torch.randn(rows, cols, device="cuda", generator=g) for _ in range(2)]
b = torch.randn(cols, device="cuda", generator=g)
n = xs[0].numel()
src, dst = torch.empty_like(xs[0]), torch.empty_like(xs[0])
copy_ms = time_ms(lambda k: dst.copy_(src))
keep = set(random.Random(seed).sample(range(WARMUP, WARMUP + REPEATS * INNER), 3))
kept = {}
kernel_ms = time_ms(lambda k: ops.fused(xs[k % 2], b, a_of(k)), keep, kept)
torch_ms = time_ms(lambda k: torch.nn.functional.gelu(a_of(k) * xs[k % 2] + b))
ok = len(kept) == len(keep)
for k, y in kept.items():
    want = torch.nn.functional.gelu(a_of(k) * xs[k % 2] + b)
    ok = ok and isinstance(y, torch.Tensor) and y.shape == want.shape
    ok = ok and bool(torch.allclose(y, want, rtol=1e-4, atol=1e-5))
kept.clear()

kernels, profile_error = {}, None
try:
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for k in range(3):
            ops.fused(xs[k % 2], b, a_of(k))
        torch.cuda.synchronize()
    for evt in prof.events():
        if getattr(evt, "device_type", None) == DeviceType.CUDA:
            us = evt.time_range.elapsed_us()
            kernels[evt.name] = kernels.get(evt.name, 0.0) + us / 1e3
except Exception as err:
    profile_error = f"{type(err).__name__}: {err}"[:300]
print(json.dumps({"device": torch.cuda.get_device_name(), "n": n, "copy_ms": copy_ms, "copy_bytes": 8 * n,
                  "kernel_ms": kernel_ms, "torch_ms": torch_ms, "bytes": 4 * (2 * n + cols), "correct": ok,
                  "kernels": kernels, "profile_error": profile_error}))
"""
)

BENCH_ROWS = 12288 + 32 * _rng.randint(0, 64)
BENCH_COLS = 4096
BENCH_A = round(_rng.uniform(0.25, 2.0), 3)
_measured: dict[str, dict] = {}


def measure(learner) -> dict:
    """The check's own timing of ops.fused, PyTorch and a device-to-device copy (once per run)."""
    if "m" not in _measured:
        learner.require("ops.py")
        res = drive(
            learner,
            MEASURE_DRIVER,
            str(BENCH_ROWS),
            str(BENCH_COLS),
            str(BENCH_A),
            str(_rng.randrange(1 << 30)),
            timeout_s=240,
        )
        require_cuda_stack(res)
        if res.returncode != 0:
            fail(f"timing ops.fused on the GPU failed (exit code {res.returncode}): {res.tail()}")
        m = res.json()
        if not isinstance(m, dict) or "kernel_ms" not in m:
            fail(f"timing ops.fused on the GPU printed no result: {res.tail()}")
        m["copy_gbps"] = m["copy_bytes"] / (m["copy_ms"] * 1e-3) / 1e9
        m["kernel_gbps"] = m["bytes"] / (m["kernel_ms"] * 1e-3) / 1e9
        m["torch_gbps"] = m["bytes"] / (m["torch_ms"] * 1e-3) / 1e9
        _measured["m"] = m
    return _measured["m"]


def require_own_kernel(m: dict, figures) -> None:
    """The GPU time of three ops.fused calls is spent in kernel.cu's fused_bias_gelu."""
    kernels = m.get("kernels") or {}
    total = sum(kernels.values())
    if not total:
        # No kernel seen at all (profiling unavailable here): matches-reference's probe still
        # shows that ops.fused runs kernel.cu.
        figures.add("kernels of one ops.fused call", "not seen by the profiler", note=m.get("profile_error") or "")
        return
    ours = sum(ms for name, ms in kernels.items() if name == KERNEL or name.startswith(f"{KERNEL}("))
    others = sorted(((ms, name) for name, ms in kernels.items() if ms and name != KERNEL), reverse=True)
    figures.add(
        "GPU time in fused_bias_gelu",
        ours / total,
        "",
        f"of {total:.3f} ms over 3 calls of ops.fused; needs >= {MIN_OWN_KERNEL_SHARE}",
    )
    if ours < MIN_OWN_KERNEL_SHARE * total:
        shown = "; ".join(f"{name[:90]} {ms:.3f} ms" for ms, name in others[:3])
        fail(
            f"three calls of ops.fused spent {ours:.3f} of {total:.3f} ms of GPU time in kernel.cu's {KERNEL}; the "
            f"rest went to other kernels ({shown}). ops.fused must do its work with your kernel, at every size."
        )


@requirement("bandwidth")
def test_bandwidth(learner, figures):
    m = measure(learner)
    figures.add("device", m["device"])
    figures.add("size", f"{BENCH_ROWS} x {BENCH_COLS} float32", note=f"{m['bytes'] / 1e6:.0f} MB moved per call")
    figures.add("device-to-device copy", m["copy_gbps"], "GB/s", "read + write, measured in this run")
    figures.add("ops.fused", m["kernel_gbps"], "GB/s", f"{m['kernel_ms']:.3f} ms median (CUDA events)")
    figures.add("torch gelu(a * x + b)", m["torch_gbps"], "GB/s", f"{m['torch_ms']:.3f} ms median")
    fraction = m["kernel_gbps"] / m["copy_gbps"]
    speedup = m["torch_ms"] / m["kernel_ms"]
    figures.add("fraction of copy bandwidth", fraction, "", f"needs >= {MIN_COPY_FRACTION}")
    figures.add("speedup over torch", speedup, "x", f"needs >= {MIN_SPEEDUP}")
    if not m["correct"]:
        fail(
            "ops.fused does not match torch.nn.functional.gelu(a * x + b) at the benchmark size, on calls whose x "
            "and a change from one call to the next (a result cannot be reused)"
        )
    require_own_kernel(m, figures)
    if fraction < MIN_COPY_FRACTION:
        fail(
            f"ops.fused moves {m['kernel_gbps']:.0f} GB/s effective ({m['kernel_ms']:.3f} ms for "
            f"{m['bytes'] / 1e6:.0f} MB), {fraction:.0%} of the {m['copy_gbps']:.0f} GB/s a device-to-device copy "
            f"reaches on this GPU; needs >= {MIN_COPY_FRACTION:.0%}. Are consecutive threads reading consecutive "
            "elements (coalesced), and is the block a few warps, not one?"
        )
    if speedup < MIN_SPEEDUP:
        fail(
            f"ops.fused takes {m['kernel_ms']:.3f} ms against {m['torch_ms']:.3f} ms for PyTorch's three kernels: "
            f"{speedup:.2f}x; a fused kernel should be >= {MIN_SPEEDUP}x faster, since it reads and writes "
            "the tensor once instead of three times."
        )


@requirement("benchmark")
def test_benchmark_script(learner, figures):
    learner.require("bench.py")
    m = measure(learner)
    res = learner.run(
        ["python", "bench.py", "--rows", str(BENCH_ROWS), "--cols", str(BENCH_COLS), "--a", str(BENCH_A), "--json"],
        timeout_s=180,
    )
    require_cuda_stack(res)
    if res.returncode != 0:
        fail(f"python bench.py --json failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if not isinstance(out, dict):
        fail("bench.py --json must print one JSON object")
    values = {}
    for key in ("kernel_ms", "torch_ms", "kernel_gbps", "torch_gbps"):
        v = out.get(key)
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
            fail(f"bench.py --json reported {key} = {v!r}; it must be a positive number")
        values[key] = float(v)
    for key, v in values.items():
        figures.add(f"bench.py {key}", v, "ms" if key.endswith("_ms") else "GB/s")
    figures.add("check's own ops.fused time", m["kernel_ms"], "ms")
    for name in ("kernel", "torch"):
        implied = m["bytes"] / (values[f"{name}_ms"] * 1e-3) / 1e9
        gbps, ms = values[f"{name}_gbps"], values[f"{name}_ms"]
        if not 0.8 <= gbps / implied <= 1.25:
            fail(
                f"bench.py reports {name}_gbps = {gbps:.0f} with {name}_ms = {ms:.3f}, which implies "
                f"{gbps * ms / 1e3:.0f} MB "
                f"per call; the least the operation must move is {m['bytes'] / 1e6:.0f} MB (read x and b, write y, "
                "4 bytes each). Count those bytes for both."
            )
        if values[f"{name}_gbps"] > 1.15 * m["copy_gbps"]:
            fail(
                f"bench.py reports {values[f'{name}_gbps']:.0f} GB/s for {name}, more than a device-to-device copy "
                f"reaches on this GPU ({m['copy_gbps']:.0f} GB/s): the timing stops before the GPU has finished. "
                "Time with CUDA events, or synchronise before reading the clock."
            )
    ratio = values["kernel_ms"] / m["kernel_ms"]
    if not 0.5 <= ratio <= 2.5:
        fail(
            f"bench.py says ops.fused takes {values['kernel_ms']:.3f} ms; timed with CUDA events after a warm-up, "
            f"it takes {m['kernel_ms']:.3f} ms ({ratio:.2f}x). Warm up first (the first call compiles the kernel) "
            "and report the median of several timed runs."
        )

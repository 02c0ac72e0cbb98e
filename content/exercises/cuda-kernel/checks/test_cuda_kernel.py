"""Hidden checks of the cuda-kernel exercise (a fused bias + GELU in CUDA C and numba).

CPU: kernel.cu is compiled here with gpudojo's compile service (NVRTC; compiling is not
running the learner's code) for sm_80 and sm_90; the numba twin runs in numba's CUDA
simulator in a child, on inputs drawn here; launch_config is called in a child.
GPU: ops.fused and bench.py run in children; every reference is computed in this process.
"""

from __future__ import annotations

import json
import math
import random
import re

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


NUMBA_DRIVER = r"""
import json, sys, traceback
import numpy as np
cases = json.loads(CASES_JSON)
try:
    import kernel_numba
    kernel = kernel_numba.fused_bias_gelu
except Exception as err:
    print(json.dumps({"import_error": "".join(traceback.format_exception_only(type(err), err)).strip()}))
    sys.exit(0)
out = []
for c in cases:
    n, cols = c["rows"] * c["cols"], c["cols"]
    x = np.array(c["x"], dtype=np.float32)
    b = np.array(c["b"], dtype=np.float32)
    y = np.full(n, np.nan, dtype=np.float32)
    try:
        kernel[c["grid"], c["block"]](x, b, y, float(c["a"]), n, cols)
        out.append({"y": [None if v != v else float(v) for v in y]})
    except IndexError as err:
        out.append({"out_of_range": str(err)})
    except Exception as err:
        out.append({"error": "".join(traceback.format_exception_only(type(err), err)).strip()[-800:]})
print(json.dumps({"results": out}))
"""


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


@requirement("bounds-check")
def test_bounds_check_in_simulator(learner, figures):
    learner.require("kernel_numba.py")
    cases = numba_cases()
    driver = NUMBA_DRIVER.replace("CASES_JSON", repr(json.dumps(cases)))
    res = learner.drive(driver, timeout_s=60, env={"NUMBA_ENABLE_CUDASIM": "1"})
    if res.returncode != 0:
        fail(f"running kernel_numba.py in the simulator failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
    if "import_error" in out:
        fail(f"kernel_numba.py could not be imported, or has no fused_bias_gelu kernel: {out['import_error']}")
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


LAUNCH_DRIVER = r"""
import json, sys, traceback
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
    res = learner.drive(LAUNCH_DRIVER, json.dumps(ns), timeout_s=60)
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

MATCH_DRIVER = r"""
import json, sys, traceback
import numpy as np
import torch
data = np.load(sys.argv[1])
meta = json.loads(sys.argv[2])
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


def require_cuda_stack(res) -> None:
    text = res.stderr + res.stdout
    if "No module named 'cupy'" in text:
        fail("CuPy is not installed, so ops.py cannot launch kernel.cu: pip install 'gpudojo[gpu]' (cupy-cuda13x).")


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
    meta, arrays = [], {}
    for k, shape in enumerate(shapes):
        arrays[f"x{k}"] = np.array([_rng.gauss(0, 2) for _ in range(math.prod(shape))], dtype=np.float32).reshape(shape)
        arrays[f"b{k}"] = np.array([_rng.gauss(0, 1) for _ in range(shape[-1])], dtype=np.float32)
        meta.append({"a": round(_rng.uniform(0.25, 2.0), 3), "transposed": k == 3})
    inputs, outputs = tmp_path / "inputs.npz", tmp_path / "outputs.npz"
    np.savez(inputs, **arrays)
    res = learner.drive(MATCH_DRIVER, str(inputs), json.dumps(meta), str(outputs), timeout_s=180)
    require_cuda_stack(res)
    if res.returncode != 0:
        fail(f"calling ops.fused on CUDA tensors failed (exit code {res.returncode}): {res.tail()}")
    out = res.json()
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


MEASURE_DRIVER = r"""
import json, statistics, sys
import torch
rows, cols, a = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
import ops

def time_ms(fn, warmup=3, repeats=15, inner=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / inner)
    return statistics.median(ts)

g = torch.Generator(device="cuda").manual_seed(int(sys.argv[4]))
x = torch.randn(rows, cols, device="cuda", generator=g)
b = torch.randn(cols, device="cuda", generator=g)
n = x.numel()
src, dst = torch.empty_like(x), torch.empty_like(x)
copy_ms = time_ms(lambda: dst.copy_(src))
kernel_ms = time_ms(lambda: ops.fused(x, b, a))
torch_ms = time_ms(lambda: torch.nn.functional.gelu(a * x + b))
ok = bool(torch.allclose(ops.fused(x, b, a), torch.nn.functional.gelu(a * x + b), rtol=1e-4, atol=1e-5))
print(json.dumps({"device": torch.cuda.get_device_name(), "n": n, "copy_ms": copy_ms, "copy_bytes": 8 * n,
                  "kernel_ms": kernel_ms, "torch_ms": torch_ms, "bytes": 4 * (2 * n + cols), "correct": ok}))
"""

BENCH_ROWS = 12288 + 32 * _rng.randint(0, 64)
BENCH_COLS = 4096
BENCH_A = round(_rng.uniform(0.25, 2.0), 3)
_measured: dict[str, dict] = {}


def measure(learner) -> dict:
    """The check's own timing of ops.fused, PyTorch and a device-to-device copy (once per run)."""
    if "m" not in _measured:
        learner.require("ops.py")
        res = learner.drive(
            MEASURE_DRIVER, str(BENCH_ROWS), str(BENCH_COLS), str(BENCH_A), str(_rng.randrange(1 << 30)), timeout_s=180
        )
        require_cuda_stack(res)
        if res.returncode != 0:
            fail(f"timing ops.fused on the GPU failed (exit code {res.returncode}): {res.tail()}")
        m = res.json()
        m["copy_gbps"] = m["copy_bytes"] / (m["copy_ms"] * 1e-3) / 1e9
        m["kernel_gbps"] = m["bytes"] / (m["kernel_ms"] * 1e-3) / 1e9
        m["torch_gbps"] = m["bytes"] / (m["torch_ms"] * 1e-3) / 1e9
        _measured["m"] = m
    return _measured["m"]


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
        fail("ops.fused does not match torch.nn.functional.gelu(a * x + b) at the benchmark size")
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

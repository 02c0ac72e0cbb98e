"""lab-01-cuda-hello: the entry script end to end (simulator here, GPU where there is one), its
manifest in the course catalog, the playground launches it lists, and the pieces of the GPU
path that can be checked without a GPU (launch planning, the NVML / CUDA runtime comparison)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib

import pytest

from gpudojo.course.catalog import load_catalog
from gpudojo.gpu.models import GpuFacts, MigState
from gpudojo.kernels.models import CompileRequest, RunRequest
from gpudojo.kernels.notebook import detect_gpu
from gpudojo.kernels.service import KernelLimits, KernelService
from gpudojo.paths import material_root

LAB_DIR = material_root("labs") / "lab-01-cuda-hello"
MANIFEST = tomllib.loads((LAB_DIR / "lab.toml").read_text(encoding="utf-8"))
ON_GPU = detect_gpu() is not None


@pytest.fixture(scope="module")
def lab_modules():
    """run_lab and device_facts, imported the way `python run_lab.py` imports them (no .pyc in labs/)."""
    sys.path.insert(0, str(LAB_DIR))
    write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        yield importlib.import_module("run_lab"), importlib.import_module("device_facts")
    finally:
        sys.dont_write_bytecode = write_bytecode
        sys.path.remove(str(LAB_DIR))


def run_lab(tmp_path, *argv: str, lab_dir=LAB_DIR) -> tuple[subprocess.CompletedProcess, list[dict], float]:
    """Run the entry script as the run service does; returns what labkit wrote to the metrics file."""
    # The kernel cache goes under tmp_path, and nothing is written into labs/.
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "GPUDOJO_RUN_DIR": str(run_dir),
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "run_lab.py", *argv], cwd=lab_dir, env=env, capture_output=True, text=True, timeout=120
    )
    metrics = run_dir / "metrics" / "rank0.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    return done, records, time.monotonic() - started


def checks_of(records: list[dict]) -> dict[str, dict]:
    """Each check's record by id; labkit.check is called once per check."""
    found = [r for r in records if "check" in r]
    assert len({r["check"] for r in found}) == len(found), "a check was reported twice"
    return {r["check"]: r for r in found}


def test_lab_passes_every_check_that_applies(tmp_path):
    done, records, seconds = run_lab(tmp_path, "--n", "1000", "--block", "128", "--part", "all")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert seconds < 60
    mode = "GPU" if ON_GPU else "simulator"
    assert f"mode: {mode}" in done.stdout

    checks = checks_of(records)
    # Every check the manifest declares is reported once, and no other.
    assert set(checks) == {c["id"] for c in MANIFEST["checks"]}
    for check in ("cuda-compiles", "numba-compiles", "vector-add", "vector-add-grid-stride", "reduction"):
        assert checks[check]["ok"] is True, checks[check]
    # Both source files of each language are in the compile checks' detail.
    assert "vector_add.cu" in checks["cuda-compiles"]["detail"] and "block_sum.cu" in checks["cuda-compiles"]["detail"]
    assert checks["device-facts"]["ok"] is (True if ON_GPU else None)

    # The kernels ran where the mode says, and each reported number is a metric the manifest declares.
    metrics = [r for r in records if "check" not in r]
    assert all(r["rank"] == 0 and r["step"] is None for r in metrics)
    errors = [r for r in metrics if "max_abs_error" in r]
    assert len(errors) == 3 and {r["mode"] for r in errors} == {"gpu" if ON_GPU else "simulator"}
    declared = {m["name"] for m in MANIFEST["metrics"]}
    numbers = {k for r in metrics for k, v in r.items() if isinstance(v, int | float) and k not in ("t", "rank")}
    assert numbers <= declared
    registers = {(r["stage"], r["language"]): r["registers"] for r in metrics if "registers" in r}
    assert len(registers) == 6 and all(v > 0 for v in registers.values())
    counts = "6 passed, 0 failed, 0 not applicable" if ON_GPU else "5 passed, 0 failed, 1 not applicable"
    assert f"mode {mode}; {counts}" in done.stdout


def test_wrong_reduction_fails_its_check_and_the_exit_code(tmp_path):
    lab = tmp_path / "lab"
    shutil.copytree(LAB_DIR, lab)
    # Start the tree at a quarter of the block instead of half: half of every block's sums are lost.
    for name, old, new in (
        ("block_sum.cu", "int s = blockDim.x / 2;", "int s = blockDim.x / 4;"),
        ("block_sum_numba.py", "s = cuda.blockDim.x // 2", "s = cuda.blockDim.x // 4"),
    ):
        source = (lab / name).read_text(encoding="utf-8")
        assert old in source
        (lab / name).write_text(source.replace(old, new), encoding="utf-8")
    done, records, _ = run_lab(tmp_path, "--n", "2048", "--block", "256", "--part", "reduction", lab_dir=lab)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-4000:]
    reduction = checks_of(records)["reduction"]
    assert reduction["ok"] is False and "1 wrong" in reduction["detail"]
    assert "1 failed" in done.stdout


def test_block_that_breaks_the_tree_is_refused(tmp_path):
    done, records, _ = run_lab(tmp_path, "--n", "1000", "--block", "96")
    assert done.returncode == 2 and records == []
    assert "power of two" in done.stderr


def test_manifest_loads_without_problems():
    data = load_catalog(material_root("content"), material_root("labs"))
    assert [p for p in data.problems if "lab-01-cuda-hello" in p.file] == []
    lab = next(i for i in data.labs if i.meta.id == "lab-01-cuda-hello")
    assert lab.meta.needs == "gpu" and lab.meta.order == 1 and lab.meta.cpu_path
    extra = lab.meta.model_extra
    assert extra["entry"] == "run_lab.py" and (LAB_DIR / extra["entry"]).is_file()
    assert extra["launcher"] == "python"
    params = {p["name"]: p for p in extra["parameters"]}
    assert set(params) == {"n", "block", "part", "arch"}
    assert params["block"]["default"] in params["block"]["choices"]
    assert params["n"]["min"] <= params["n"]["default"] <= params["n"]["max"]


def test_playground_lists_every_launch_of_the_lab():
    from gpudojo.kernels.examples import load_examples

    doc = load_examples(material_root("labs"), "lab-01-cuda-hello")
    assert doc.problems == []
    assert [(e.language, e.kernel) for e in doc.examples] == [(k["language"], k["kernel"]) for k in MANIFEST["kernels"]]
    assert all(e.source == (LAB_DIR / e.file).read_text(encoding="utf-8") for e in doc.examples)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = KernelService(tmp_path_factory.mktemp("lab01-kernel-cache"))
    yield svc
    svc.close()


@pytest.mark.parametrize("entry", MANIFEST["kernels"], ids=lambda e: f"{e['language']}-{e['kernel']}")
def test_playground_launch_compiles_and_checks(service, entry):
    source = (LAB_DIR / entry["file"]).read_text(encoding="utf-8")
    req = RunRequest.model_validate(
        {
            "source": source,
            "language": entry["language"],
            "kernel": entry["kernel"],
            "grid": entry["grid"],
            "block": entry["block"],
            "shared_bytes": entry.get("shared_bytes", 0),
            "args": entry["args"],
            "expected": entry["expected"],
        }
    )
    # Small enough for the simulator, so the playground can run it on any machine.
    assert req.threads <= KernelLimits().simulator_max_threads

    compiled = service.compile(
        CompileRequest(source=source, language=req.language, arch="sm_80", block_size=req.block[0])
    )
    assert compiled.ok, compiled.diagnostics
    kernel = next(k for k in compiled.kernels if k.name == req.kernel)
    assert kernel.registers > 0 and kernel.sass and kernel.occupancy.error is None

    if req.language == "numba":  # the simulator runs it and NumPy checks its output
        result = service.run(req, gpu=None)
        assert result.status == "passed", (result.error, result.checks)
        assert result.mode == "simulator"
    else:  # CUDA C without a GPU: compiled, reported, and run in the CPU emulator
        result = service.run(req, gpu=None)
        assert result.status == "passed", (result.error, result.checks)
        assert result.mode == "cpu-emulation" and result.compile.ok


def test_launch_plan_fills_the_gpu_once_and_respects_the_simulator_budget(lab_modules):
    run_lab_module, _ = lab_modules
    vector_add = run_lab_module.PARTS["vector-add"]
    # An H100/H200 has 132 SMs; 8 blocks of 256 threads fit on each.
    gpu = run_lab_module.plan_launches(
        vector_add,
        1 << 24,
        256,
        on_gpu=True,
        sm_count=132,
        blocks_per_sm={"vector_add_grid_stride": 8},
        simulator_threads=4096,
    )
    assert [(launch.kernel, launch.n, launch.grid) for launch in gpu] == [
        ("vector_add", 1 << 24, 65536),
        ("vector_add_grid_stride", 1 << 24, 1056),
    ]
    sim = run_lab_module.plan_launches(
        vector_add, 1 << 24, 256, on_gpu=False, sm_count=None, blocks_per_sm={}, simulator_threads=4096
    )
    assert [(launch.n, launch.grid) for launch in sim] == [(4096, 16), (4096, 4)]
    tiny = run_lab_module.plan_launches(
        run_lab_module.PARTS["reduction"],
        10,
        512,
        on_gpu=True,
        sm_count=132,
        blocks_per_sm={"block_sum": 4},
        simulator_threads=4096,
    )
    assert tiny[0].grid == 1


def _nvml_gpu(index=0, bus="0000:3B:00.0", cc="9.0", memory=85_520_809_984, mig="disabled"):
    return GpuFacts(
        index=index,
        name="NVIDIA H200",
        uuid="GPU-0123abcd-0000-1111-2222-333344445555",
        pci_bus_id=bus,
        compute_capability=cc,
        memory_total_bytes=memory,
        mig=MigState(current=mig),
    )


def _runtime_device(device_facts, ordinal=0, bus=(0, 0x3B, 0), cc="9.0", memory=85_031_714_816):
    return device_facts.RuntimeDevice(
        ordinal=ordinal,
        name="NVIDIA H200",
        compute_capability=cc,
        memory_total_bytes=memory,
        pci_bus_id=device_facts.format_bus_id(*bus),
        uuid=device_facts.format_uuid(bytes.fromhex("0123abcd000011112222333344445555")),
        sm_count=132,
        warp_size=32,
        max_threads_per_block=1024,
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        registers_per_sm=65536,
        shared_bytes_per_block=49152,
        shared_bytes_per_block_optin=232448,
        shared_bytes_per_sm=233472,
        l2_bytes=50 * 2**20,
    )


def test_device_facts_agree_and_disagree(lab_modules):
    _, device_facts = lab_modules
    same = device_facts.compare([_nvml_gpu()], [_runtime_device(device_facts)])
    assert [c.ok for c in same] == [True]
    assert {r.fact for r in same[0].rows} == {"PCI bus id", "name", "compute capability", "memory", "UUID"}

    wrong_cc = device_facts.compare([_nvml_gpu()], [_runtime_device(device_facts, cc="8.0")])
    assert not wrong_cc[0].ok
    assert [r.fact for r in wrong_cc[0].rows if r.agree is False] == ["compute capability"]
    too_little = device_facts.compare([_nvml_gpu()], [_runtime_device(device_facts, memory=70 * 2**30)])
    assert [r.fact for r in too_little[0].rows if r.agree is False] == ["memory"]
    elsewhere = device_facts.compare([_nvml_gpu()], [_runtime_device(device_facts, bus=(0, 0x5E, 0))])
    assert not elsewhere[0].ok and elsewhere[0].nvml_index is None

    # CUDA numbers the visible GPUs its own way; matching by PCI address still pairs them.
    two = [_nvml_gpu(0, "0000:18:00.0"), _nvml_gpu(1, "0000:3B:00.0")]
    renumbered = device_facts.compare(two, [_runtime_device(device_facts, ordinal=0)])
    assert renumbered[0].ok and renumbered[0].nvml_index == 1
    assert any(r.fact == "index" and "CUDA_DEVICE_ORDER" in r.note for r in renumbered[0].rows)

    # A MIG slice has a fraction of the memory: not compared, not a failure.
    mig = device_facts.compare([_nvml_gpu(mig="enabled")], [_runtime_device(device_facts, memory=10 * 2**30)])
    assert mig[0].ok and next(r for r in mig[0].rows if r.fact == "memory").agree is None

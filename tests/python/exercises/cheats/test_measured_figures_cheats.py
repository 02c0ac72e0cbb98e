"""Shortcuts through the figures a learner's program prints, in mixed-precision,
gpu-sharing-strategies, gpu-introspection, gpu-memory-profiling and inference-optimization.

Each shortcut is our solution with a few lines changed (the change is asserted to have
happened): figures written in instead of measured, outputs hard-coded, or the work skipped.
It is checked through the exercise service as a learner's copy would be. None may complete
the exercise: the requirement meant for it must fail, saying why in the learner's terms.
Requirements listed in ``also`` may fail with it (the shortcut breaks them too); every other
requirement that runs here must pass, so the shortcut is caught by the check meant for it.

The checks recompute the figures in a driver of their own (or hold the printed figure to their
own measurement within a tolerance); where they cannot, the printed figure is shown as
information and counts for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import shortcuts
from shortcuts import (
    assert_says,
    check,
    solution_copy,
)

from conftest import nvml_driver_present
from gpudojo.course.exercises import ExerciseService
from gpudojo.paths import material_root

CONTENT = material_root("content")

pytestmark = pytest.mark.timeout(900)
needs_gpu = pytest.mark.skipif(not nvml_driver_present(), reason="needs an NVIDIA GPU (runs on the GPU machine)")


service = shortcuts.service  # the exercise service fixture these tests check through


@dataclass(frozen=True)
class Shortcut:
    exercise: str
    file: str
    edits: tuple[tuple[str, str], ...]  # (text of our solution, what the shortcut puts there)
    fails: str  # the requirement that must catch it
    says: tuple[str, ...]  # what its message must say (case-insensitive)
    also: tuple[str, ...] = ()  # requirements the shortcut may break as well
    gpu: bool = False  # caught by a requirement that runs only on a GPU


def learner_copy(tmp_path: Path, shortcut: Shortcut) -> Path:
    """Our solution with the shortcut's edits, each asserted to have happened."""
    return solution_copy(tmp_path, shortcut.exercise, shortcut.file, shortcut.edits)


# --- mixed-precision: the matrix's losses, step times and peaks ------------------------------------

MP_RESULTS = "    results = {p: run_precision(cfg, p, device) for p in PRECISIONS}\n"

MIXED_PRECISION = {
    # The bf16 row never trained: fp32's losses nudged by 0.1% and half its step time.
    "mp-bf16-row-made-up-from-fp32": Shortcut(
        "mixed-precision",
        "mp_bench.py",
        (
            (
                MP_RESULTS,
                '    results = {p: run_precision(cfg, p, device) for p in ("fp32", "tf32", "fp16")}\n'
                '    fp32 = results["fp32"]\n'
                '    fake = [v * 1.001 for v in fp32["losses"]]\n'
                '    results["bf16"] = dict(fp32, losses=fake, final_loss=fake[-1], step_ms=fp32["step_ms"] / 2)\n',
            ),
        ),
        "matrix",
        ("the bf16 row's losses are not the ones your make_step gives", "not numbers written in"),
    ),
    # Every row's peak memory written in (64 MiB) instead of measured.
    "mp-peak-memory-written-in": Shortcut(
        "mixed-precision",
        "mp_bench.py",
        (('        "peak_memory_bytes": int(peak),\n', '        "peak_memory_bytes": 64 * 2**20,\n'),),
        "matrix",
        ("peak memory is 64 MiB", "but the check measured the same training"),
    ),
    # bf16 "trained" in fp32 (no autocast), its losses printed a little off so they do not
    # equal fp32's: the step itself is watched, and the check's own run is what is compared.
    "mp-bf16-without-autocast": Shortcut(
        "mixed-precision",
        "mp_bench.py",
        (
            (
                '    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)\n',
                '    autocast_dtype = {"fp16": torch.float16}.get(precision)\n',
            ),
            (
                "        losses.append(loss.item())\n",
                '        losses.append(loss.item() * (1.0002 if precision == "bf16" else 1.0))\n',
            ),
        ),
        "bf16-autocast",
        ("float32", "under bfloat16 autocast every one runs in bfloat16"),
        also=("loss-tracks", "matrix", "recommendation"),
    ),
}
# The GPU's rows: TF32's step time written in (caught against the check's own CUDA-event timing).
MIXED_PRECISION_GPU = {
    "mp-tf32-step-time-written-in": Shortcut(
        "mixed-precision",
        "mp_bench.py",
        (
            (
                MP_RESULTS,
                MP_RESULTS + '    if results["tf32"]["measured"]:\n'
                '        results["tf32"]["step_ms"] = results["fp32"]["step_ms"] / 10\n',
            ),
        ),
        "matrix",
        ("the tf32 row's median step time", "the step time in the report is not measured"),
        also=("recommendation",),
        gpu=True,
    ),
}

# --- gpu-sharing-strategies: the interference figures ----------------------------------------------

SHARING = {
    # interference() answers from the sample recording whatever file it is given.
    "sharing-interference-from-the-sample": Shortcut(
        "gpu-sharing-strategies",
        "sharing.py",
        (
            (
                "    runs = recording if isinstance(recording, dict) else read_recording(recording)\n",
                '    runs = read_recording(DATA / "interference-sample.csv")\n',
            ),
        ),
        "interference-metrics",
        ("interference() must report", "every strategy in the recording"),
        also=("interference-verdict",),
    ),
}
SHARING_GPU = {
    # The lone tenant is measured; the shared ones are written in as half of it.
    "sharing-shared-tenants-written-in": Shortcut(
        "gpu-sharing-strategies",
        "sharing.py",
        (
            (
                "    shared = _run_tenants(tenants, size, seconds, device)\n",
                '    shared = [dict(alone, tenant=i, pid=alone["pid"] + 1 + i, iters_per_s=alone["iters_per_s"] / 10)'
                " for i in range(tenants)]\n",
            ),
        ),
        "measure-gpu",
        ("slower shared, but two processes sharing this gpu",),
        gpu=True,
    ),
    # Every throughput written in.
    "sharing-measure-made-up": Shortcut(
        "gpu-sharing-strategies",
        "sharing.py",
        (
            (
                "            result = measure(args.seconds, args.size, args.device)\n",
                '            result = {"alone": {"iters_per_s": 5.0, "pid": 1}, "shared": [{"iters_per_s": 2.5, '
                '"pid": 2}, {"iters_per_s": 2.4, "pid": 3}], "device": "cuda", "slowdown": [2.0, 2.08], '
                '"shared_sum_over_alone": 0.98}\n',
            ),
        ),
        "measure-gpu",
        ("but the check measured the same loop",),
        gpu=True,
    ),
}

# --- gpu-introspection: the host facts and the benchmarks ------------------------------------------

INTROSPECTION = {
    # A CPU count written in instead of read from the machine.
    "introspection-cpu-count-written-in": Shortcut(
        "gpu-introspection",
        "gpu_info.py",
        (('        "cpu_count": os.cpu_count(),\n', '        "cpu_count": 96,\n'),),
        "no-gpu",
        ("host.cpu_count is 96", "logical cpus"),
        also=("json-report",),
    ),
}
INTROSPECTION_GPU = {
    # The matmul rate written in as the datasheet peak (a share of 100%, which the old check let pass).
    "introspection-matmul-rate-written-in": Shortcut(
        "gpu-introspection",
        "gpu_info.py",
        (
            (
                "        tflops = 2 * n**3 / (mm_ms * 1e-3) / 1e12\n",
                '        tflops = peak["bf16_tflops"] if peak else 2 * n**3 / (mm_ms * 1e-3) / 1e12\n',
            ),
        ),
        "benchmarks",
        ("for the bf16 matmul; the check measures", "report what you measured"),
        gpu=True,
    ),
}

# --- gpu-memory-profiling: the four contributors, measured ----------------------------------------

MEMORY = {
    # Adam's state assumed (two moments per parameter) instead of read from the timeline: right
    # for Adam, twice too much for SGD with momentum.
    "memory-optimizer-state-assumed": Shortcut(
        "gpu-memory-profiling",
        "profile_mem.py",
        (
            (
                '        "optimizer_state": highest["optimizer_state"],\n',
                '        "optimizer_state": 2 * rows[0]["parameters"],\n',
            ),
        ),
        "reports-model-state",
        ("reports optimizer_state", "the tensors in sgd.state after a step take"),
    ),
    # No category walk for the activations: everything at the peak but the weights.
    "memory-activations-not-measured": Shortcut(
        "gpu-memory-profiling",
        "profile_mem.py",
        (
            (
                '        "activations": highest["activations"],\n',
                '        "activations": totals[i] - rows[0]["parameters"],\n',
            ),
        ),
        "reports-activations",
        ("reports activations", "the profiler's activation category peaks at"),
    ),
}

# --- inference-optimization: the report's figures, and a one-call step skipped ---------------------

INFERENCE = {
    # Every step's accuracy written in.
    "inference-accuracy-written-in": Shortcut(
        "inference-optimization",
        "serve.py",
        (('            entry["accuracy"] = accuracy(fn, x_test, y_test)\n', '            entry["accuracy"] = 1.0\n'),),
        "report",
        ("reports an accuracy of 1.000", "more than 0.03 apart", "not a number written in"),
    ),
    # The half step serves the float32 model (its one call skipped).
    "inference-half-step-skipped": Shortcut(
        "inference-optimization",
        "serve.py",
        (
            ("        low = model.to(dtype)\n", "        low = model\n"),
            ("            return low(x.to(dtype)).float()\n", "            return low(x).float()\n"),
        ),
        "lower-precision",
        ("float32",),
    ),
    # Batches of the right size, each holding one request copied max_batch times: the fill
    # looks right, the throughput is what one request at a time gets, or worse.
    "inference-batches-padded-with-copies": Shortcut(
        "inference-optimization",
        "serve.py",
        (
            (
                "            out = fn(torch.cat(list(requests[i:j])))\n",
                "            out = torch.cat([fn(torch.cat([requests[k]] * max_batch))[:1] for k in range(i, j)])\n",
            ),
        ),
        "batching",
        ("of the", "calling the model directly"),
    ),
}

SHORTCUTS = {**MIXED_PRECISION, **SHARING, **INTROSPECTION, **MEMORY, **INFERENCE}
GPU_SHORTCUTS = {**MIXED_PRECISION_GPU, **SHARING_GPU, **INTROSPECTION_GPU}


# Requirements judged on a speed-up measured on this machine: another job on its cores can
# push our own solution under the bar, so their outcome is left out of "every other passes".
TIMED = {"inference-optimization": {"batching", "int8-quantised"}}


def check_and_assert_caught(service: ExerciseService, tmp_path: Path, shortcut: Shortcut, gpus: int) -> None:
    attempt, outcomes, report = check(
        service, shortcut.exercise, learner_copy(tmp_path, shortcut), gpus=gpus, timeout_s=900
    )
    assert outcomes[shortcut.fails] == "failed", report
    gpu_only = {q.id for q in service.meta(shortcut.exercise).requirements if q.gpu}
    for rid, outcome in outcomes.items():
        if rid == shortcut.fails or rid in shortcut.also or rid in TIMED.get(shortcut.exercise, ()):
            continue
        assert outcome == ("skipped" if rid in gpu_only and not gpus else "passed"), report
    assert_says(attempt, shortcut.fails, shortcut.says)


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_a_figure_shortcut_is_caught_by_its_requirement(service, tmp_path, name):
    check_and_assert_caught(service, tmp_path, SHORTCUTS[name], gpus=0)


@needs_gpu
@pytest.mark.parametrize("name", sorted(GPU_SHORTCUTS))
def test_a_figure_shortcut_is_caught_on_a_gpu(service, tmp_path, name):
    check_and_assert_caught(service, tmp_path, GPU_SHORTCUTS[name], gpus=1)

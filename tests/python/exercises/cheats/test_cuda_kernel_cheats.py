"""cuda-kernel's shortcuts: each is our solution with a few lines changed (the change is
asserted to have happened), checked through the exercise service as a learner's copy would
be. None may complete the exercise; the requirement that tests what the shortcut skips must
fail, saying why in the learner's terms, and every other requirement that runs here must
still pass (the shortcut is caught by the check meant for it, not by accident).

Without a GPU: the numba twin must be a real numba.cuda kernel (compiled for a GPU by numba,
then launched in the simulator), and kernel.cu runs on hidden sizes in gpudojo's CPU emulator.
With a GPU (and CuPy), ops.fused must launch kernel.cu and cannot reuse a result.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import shortcuts
from shortcuts import (
    assert_says,
    solution_copy,
)

from conftest import nvml_driver_present
from gpudojo.course.exercises import ExerciseService
from gpudojo.paths import material_root

CONTENT = material_root("content")
SOLUTION = CONTENT / "exercises" / "cuda-kernel" / "solution"
CPU_REQUIREMENTS = ("compiles", "registers", "kernel-values", "bounds-check", "launch-config")
GPU_REQUIREMENTS = ("matches-reference", "bandwidth", "benchmark")

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="kernel.cu runs in the CPU emulator, which needs g++"),
    pytest.mark.timeout(600),
]
needs_gpu = pytest.mark.skipif(
    not nvml_driver_present() or importlib.util.find_spec("cupy") is None,
    reason="needs an NVIDIA GPU with its driver and CuPy (runs on the GPU machine)",
)


service = shortcuts.service  # the exercise service fixture these tests check through


@dataclass(frozen=True)
class Shortcut:
    file: str
    edits: tuple[tuple[str, str], ...]  # (text of our solution, what the shortcut puts there)
    fails: str  # the requirement that must catch it
    says: tuple[str, ...]  # what its message must say (case-insensitive)
    plant: tuple[tuple[str, str], ...] = ()  # files added to the learner's folder: (path, text)


def learner_copy(tmp_path: Path, shortcut: Shortcut) -> Path:
    """Our solution with the shortcut's edits, each asserted to have happened."""
    return solution_copy(tmp_path, "cuda-kernel", shortcut.file, shortcut.edits, shortcut.plant)


def check(service: ExerciseService, folder: Path, gpus: int = 0):
    service.check("cheater", "cuda-kernel", gpus, folder=folder)
    attempt = service.wait("cheater", "cuda-kernel", timeout_s=600)
    assert attempt.status == "done", attempt.error
    return attempt


def assert_caught(attempt, shortcut: Shortcut, applicable: tuple[str, ...]) -> None:
    report = "\n".join(f"{r.id}: {r.outcome}: {r.message}" for r in attempt.results)
    outcomes = {r.id: r.outcome for r in attempt.results}
    assert not attempt.completed, report
    assert outcomes[shortcut.fails] == "failed", report
    for other in applicable:
        if other != shortcut.fails:
            assert outcomes[other] == "passed", report
    assert_says(attempt, shortcut.fails, shortcut.says)


NUMBA_KERNEL = """\
@cuda.jit
def fused_bias_gelu(x, b, y, a, n, cols):
"""
NUMBA_BODY = """\
    if i < n:
        z = a * x[i] + b[i % cols]  # element i is in column i % cols
        y[i] = 0.5 * z * (1.0 + math.erf(z * INV_SQRT2))
"""
MAIN = 'if __name__ == "__main__":\n'
# kernel[grid, block](...) that computes the whole output with NumPy: any Python runs in the
# process that launches the "kernel", so it fills y with the right values.
NUMPY_LAUNCH = """\
def _numpy_launch(config):
    def launch(x, b, y, a, n, cols):
        y[:n] = gelu_reference(x[:n], b, a, cols)
    return launch

"""
CUDA_GELU = "    y[i] = 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));  // 0.7071... = 1 / sqrt(2)\n"

SHORTCUTS = {
    # The shortcut of the issue: a plain subscriptable object where the numba kernel should be.
    "numba-stand-in-object": Shortcut(
        "kernel_numba.py",
        (
            (NUMBA_KERNEL, "def _not_a_kernel(x, b, y, a, n, cols):\n"),
            (
                MAIN,
                NUMPY_LAUNCH + "class _Kernel:\n    __getitem__ = staticmethod(_numpy_launch)\n\n\n"
                "fused_bias_gelu = _Kernel()\n\n\n" + MAIN,
            ),
        ),
        "bounds-check",
        ("not a numba CUDA kernel", "@cuda.jit"),
    ),
    # A real numba kernel that computes something else (tanh where erf belongs).
    "numba-wrong-arithmetic": Shortcut(
        "kernel_numba.py",
        (("(1.0 + math.erf(z * INV_SQRT2))", "(1.0 + math.tanh(z * INV_SQRT2))"),),
        "bounds-check",
        ("outputs are wrong", "expected GELU("),
    ),
    # A @cuda.jit "kernel" whose first thread fills y with NumPy: the simulator runs it, a GPU cannot.
    "numba-numpy-in-one-thread": Shortcut(
        "kernel_numba.py",
        ((NUMBA_BODY, "    if i == 0:\n        y[:n] = gelu_reference(x[:n], b, a, cols)\n"),),
        "bounds-check",
        ("numba cannot compile", "for a GPU"),
    ),
    # The real kernel for numba's compiler, another one (the NumPy stand-in) in the simulator.
    "numba-other-kernel-in-the-simulator": Shortcut(
        "kernel_numba.py",
        (
            (
                MAIN,
                NUMPY_LAUNCH + "import os\n\nif os.environ.get('NUMBA_ENABLE_CUDASIM') == '1':\n\n"
                "    @cuda.jit\n    def fused_bias_gelu(x, b, y, a, n, cols):\n        if cuda.grid(1) == 0:\n"
                "            y[:n] = gelu_reference(x[:n], b, a, cols)\n\n\n" + MAIN,
            ),
        ),
        "bounds-check",
        ("different fused_bias_gelu in the simulator",),
    ),
    # A kernel without its bounds check, and the simulator's launch replaced on import.
    "numba-patched-simulator": Shortcut(
        "kernel_numba.py",
        (
            (NUMBA_BODY, "    z = a * x[i] + b[i % cols]\n    y[i] = 0.5 * z * (1.0 + math.erf(z * INV_SQRT2))\n"),
            (
                MAIN,
                NUMPY_LAUNCH + "import os\n\nif os.environ.get('NUMBA_ENABLE_CUDASIM') == '1':\n"
                "    from numba.cuda.simulator.kernel import FakeCUDAKernel\n\n"
                "    FakeCUDAKernel.__getitem__ = lambda self, config: _numpy_launch(config)\n\n\n" + MAIN,
            ),
        ),
        "bounds-check",
        ("changed numba's CUDA simulator", "FakeCUDAKernel.__getitem__"),
    ),
    # The same, with the patch made by a thread the import leaves running (after the check looked).
    "numba-simulator-patched-later": Shortcut(
        "kernel_numba.py",
        (
            (NUMBA_BODY, "    z = a * x[i] + b[i % cols]\n    y[i] = 0.5 * z * (1.0 + math.erf(z * INV_SQRT2))\n"),
            (
                MAIN,
                NUMPY_LAUNCH + "import os\nimport threading\nimport time\n\n\ndef _patch_later():\n"
                "    time.sleep(0.5)\n"
                "    from numba.cuda.simulator.kernel import FakeCUDAKernel\n\n"
                "    FakeCUDAKernel.__getitem__ = lambda self, config: _numpy_launch(config)\n\n\n"
                "if os.environ.get('NUMBA_ENABLE_CUDASIM') == '1':\n"
                "    threading.Thread(target=_patch_later, name='patcher').start()\n\n\n" + MAIN,
            ),
        ),
        "bounds-check",
        ("left threads running", "patcher"),
    ),
    # Two loads and a store, as the PTX test asks, with the wrong arithmetic (a ReLU).
    "cuda-wrong-arithmetic": Shortcut(
        "kernel.cu",
        ((CUDA_GELU, "    y[i] = z > 0.0f ? z : 0.0f;\n"),),
        "kernel-values",
        ("outputs of kernel.cu are wrong", "expected GELU("),
    ),
    # The right arithmetic and no bounds check: the spare threads of the last block read past x.
    "cuda-no-bounds-check": Shortcut(
        "kernel.cu",
        (("    if (i >= n) return;\n", ""),),
        "kernel-values",
        ("outside an array", "has no element", "must return before they touch x, b or y"),
    ),
    "cuda-bounds-check-off-by-one": Shortcut(
        "kernel.cu",
        (("if (i >= n) return;", "if (i > n) return;"),),
        "kernel-values",
        ("outside an array", "must return before they touch x, b or y"),
    ),
    # The bias of the row instead of the column: right on a square, wrong on the hidden shapes.
    "cuda-bias-by-row": Shortcut(
        "kernel.cu",
        (("b[i % cols]", "b[i / cols]"),),
        "kernel-values",
        ("outputs of kernel.cu are wrong",),
    ),
    # A wrong kernel.cu, and a gpudojo package planted in the folder whose "emulator" computes
    # GELU with NumPy: the check's driver never imports from the learner's folder.
    "cuda-planted-emulator": Shortcut(
        "kernel.cu",
        ((CUDA_GELU, "    y[i] = z;\n"),),
        "kernel-values",
        ("outputs of kernel.cu are wrong",),
        plant=(
            ("gpudojo/__init__.py", ""),
            ("gpudojo/kernels/__init__.py", ""),
            ("gpudojo/kernels/models.py", "class RunRequest:\n    model_validate = staticmethod(lambda d: d)\n"),
            ("gpudojo/kernels/cpu_runner/__init__.py", ""),
            (
                "gpudojo/kernels/cpu_runner/execute.py",
                "import math\n\nimport numpy as np\n\n\nclass EmulatorError(Exception):\n    pass\n\n\n"
                "def run_emulated(req, inputs, *args):\n"
                "    x, b, a = inputs['x'], inputs['b'], float(inputs['a'])\n"
                "    z = a * x.astype(np.float64) + np.resize(b, x.size)\n"
                "    y = 0.5 * z * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))\n"
                "    return {**inputs, 'y': y.astype(np.float32)}, {}, '', {'compile_ms': 0.0, 'run_ms': 0.0}\n",
            ),
        ),
    ),
    # The right values from a loop in one thread: exact on a CPU, serial on a GPU.
    "cuda-serial-loop-in-one-thread": Shortcut(
        "kernel.cu",
        (
            ("    if (i >= n) return;\n", "    if (i != 0) return;\n    for (i = 0; i < n; ++i) {\n"),
            (CUDA_GELU, CUDA_GELU + "    }\n"),
        ),
        "kernel-values",
        ("stored by 1 thread(s)", "each thread computes and stores its own y[i]"),
    ),
    # The same, one loop per block in its first thread.
    "cuda-loop-in-each-blocks-first-thread": Shortcut(
        "kernel.cu",
        (
            (
                "    if (i >= n) return;\n",
                "    if (threadIdx.x != 0) return;\n"
                "    int end = min(n, i + (int)blockDim.x);\n"
                "    for (; i < end; ++i) {\n",
            ),
            (CUDA_GELU, CUDA_GELU + "    }\n"),
        ),
        "kernel-values",
        ("thread for every element",),
    ),
    # A kernel that writes its result into x as well.
    "cuda-writes-its-input": Shortcut(
        "kernel.cu",
        ((CUDA_GELU, CUDA_GELU + "    const_cast<float*>(x)[i] = 0.0f;\n"),),
        "kernel-values",
        ("changed x or b",),
    ),
}


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_a_shortcut_is_caught_by_its_requirement(service, tmp_path, name):
    shortcut = SHORTCUTS[name]
    attempt = check(service, learner_copy(tmp_path, shortcut))
    assert {r.id: r.outcome for r in attempt.results if r.id in GPU_REQUIREMENTS} == dict.fromkeys(
        GPU_REQUIREMENTS, "skipped"
    )
    assert_caught(attempt, shortcut, CPU_REQUIREMENTS)


# Honest variants of our solution the checks must not mistake for shortcuts.
HONEST = {
    # An explicit signature compiles at import, which needs a GPU outside the simulator.
    "numba-kernel-with-a-signature": Shortcut(
        "kernel_numba.py",
        (
            (
                NUMBA_KERNEL,
                '@cuda.jit("void(float32[:], float32[:], float32[:], float32, int32, int32)")\n'
                "def fused_bias_gelu(x, b, y, a, n, cols):\n",
            ),
        ),
        "",
        (),
    ),
    # A grid-stride loop instead of one element per thread.
    "cuda-grid-stride-loop": Shortcut(
        "kernel.cu",
        (
            ("    if (i >= n) return;\n", "    for (; i < n; i += blockDim.x * gridDim.x) {\n"),
            (CUDA_GELU, CUDA_GELU + "    }\n"),
        ),
        "",
        (),
    ),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_an_honest_variant_of_our_solution_still_passes(service, tmp_path, name):
    attempt = check(service, learner_copy(tmp_path, HONEST[name]))
    report = "\n".join(f"{r.id}: {r.outcome}: {r.message}" for r in attempt.results)
    assert attempt.completed, report


# --- with a GPU: ops.fused must launch kernel.cu, and cannot reuse a result --------------------

OPS_LAUNCH = "    grid, block = launch_config(n)\n"
GPU_SHORTCUTS = {
    # PyTorch computes the answer; kernel.cu is never launched.
    "ops-fused-with-torch": Shortcut(
        "ops.py",
        ((OPS_LAUNCH, "    return torch.nn.functional.gelu(a * x + b)\n" + OPS_LAUNCH),),
        "matches-reference",
        ("does not run kernel.cu",),
    ),
    # kernel.cu at the sizes matches-reference tries, PyTorch at the benchmark's size.
    "ops-fused-torch-at-the-timed-size": Shortcut(
        "ops.py",
        ((OPS_LAUNCH, "    if n > 1 << 24:\n        return torch.nn.functional.gelu(a * x + b)\n" + OPS_LAUNCH),),
        "bandwidth",
        ("of GPU time in kernel.cu's fused_bias_gelu",),
    ),
    # The first result for a tensor is kept and returned for every later call on it.
    "ops-fused-reuses-a-result": Shortcut(
        "ops.py",
        (
            (
                "    x = x.contiguous()  # the kernel walks x as a flat row-major vector\n",
                "    key = (x.data_ptr(), tuple(x.shape))\n"
                "    if x.numel() > 1 << 24 and key in _SEEN:\n"
                "        return _SEEN[key]\n"
                "    x = x.contiguous()  # the kernel walks x as a flat row-major vector\n",
            ),
            (
                "            )\n    return y\n",
                "            )\n    if x.numel() > 1 << 24:\n        _SEEN[key] = y\n    return y\n",
            ),
            ("KERNEL_NAME = ", "_SEEN = {}\nKERNEL_NAME = "),
        ),
        "bandwidth",
        ("change from one call to the next",),
    ),
}


@needs_gpu
@pytest.mark.parametrize("name", sorted(GPU_SHORTCUTS))
def test_a_gpu_shortcut_is_caught_by_its_requirement(service, tmp_path, name):
    shortcut = GPU_SHORTCUTS[name]
    attempt = check(service, learner_copy(tmp_path, shortcut), gpus=1)
    report = "\n".join(f"{r.id}: {r.outcome}: {r.message}" for r in attempt.results)
    outcomes = {r.id: r.outcome for r in attempt.results}
    assert not attempt.completed, report
    assert outcomes[shortcut.fails] == "failed", report
    assert_says(attempt, shortcut.fails, shortcut.says)

"""Model FLOPs utilisation (MFU) for lab scripts: how much of the machine's peak a run's
throughput uses.

    labkit.declare_flops(per_sample=6 * n_weights, dtype="fp32")   # once, after building the model
    ...
    labkit.report(step, samples_per_s=rate)      # now also reports mfu (a fraction of the peak)

MFU = samples/s x model FLOPs per sample / peak FLOP/s (lesson `memory`, "MFU"). The model FLOPs
are the script's to declare: 6 per weight per sample for training (2 forward, 4 backward; Kaplan
et al., 2020), plus attention's term for a transformer. The peak is, on an NVIDIA GPU this
module knows, the datasheet's dense figure for the matmul dtype (no sparsity); on a CPU, or a GPU
it does not know, a measured one: the best rate of a large matmul in this process, labelled
"measured". The basis is printed once, so the log says what the percentage is of.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

# Dense (no 2:4 sparsity) tensor-core peaks in TFLOP/s by matmul dtype, from NVIDIA's datasheets.
# "fp32" is the CUDA-core FP32 rate (no TF32); torch uses TF32 for fp32 matmuls only when
# torch.backends.cuda.matmul.allow_tf32 is set, so "tf32" is a separate key.
# Keys are matched as whole words against torch.cuda.get_device_name() ("NVIDIA H100 80GB HBM3",
# "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB", "NVIDIA L4") in order; the first found wins, and
# "L4" does not match an L40.
_H100_SXM = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_L4 = "https://www.nvidia.com/en-us/data-center/l4/"
_L40S = "https://www.nvidia.com/en-us/data-center/l40s/"
# The H200 and the H100 SXM share the Hopper SXM's compute (the H200 differs in memory), and the
# two NVL cards share theirs; each figure is written once.
_HOPPER_SXM = {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9}
_HOPPER_NVL = {"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 59.8}
DATASHEET_PEAKS: tuple[tuple[str, dict[str, float], str], ...] = (
    ("H200 NVL", _HOPPER_NVL, _H200),
    ("H200", _HOPPER_SXM, _H200),
    ("H100 NVL", _HOPPER_NVL, _H100_SXM),
    ("H100 PCIe", {"bf16": 756.5, "fp16": 756.5, "tf32": 378.0, "fp32": 51.2}, _H100_SXM),
    ("H100", _HOPPER_SXM, _H100_SXM),  # SXM
    ("A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}, _A100),
    ("L40S", {"bf16": 362.05, "fp16": 362.05, "tf32": 183.0, "fp32": 91.6}, _L40S),
    ("L4", {"bf16": 121.0, "fp16": 121.0, "tf32": 60.0, "fp32": 30.3}, _L4),
)
DTYPES = ("bf16", "fp16", "tf32", "fp32")


@dataclass(frozen=True)
class Peak:
    flops_per_s: float
    basis: str  # what the peak is, in words: "NVIDIA H100 80GB HBM3 datasheet, dense bf16" or "measured ..."
    measured: bool


@dataclass
class _Declared:
    per_sample: float
    peak: Peak


_declared: _Declared | None = None


def datasheet_peak(device_name: str, dtype: str) -> Peak | None:
    """The datasheet's dense peak for ``dtype`` on the GPU named ``device_name``, or None if unknown."""
    for key, peaks, source in DATASHEET_PEAKS:
        if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w])", device_name) and dtype in peaks:
            return Peak(peaks[dtype] * 1e12, f"{device_name}: datasheet dense {dtype} peak ({source})", False)
    return None


def measured_matmul_peak(device: Any = None, dtype: str = "fp32", n: int | None = None, repeats: int = 5) -> Peak:
    """The best FLOP/s of an n x n matmul (2 n^3 FLOPs) in this process, on ``device`` (the CPU by
    default); n is 512 on a CPU (a few ms a matmul on one thread), 4096 on a GPU."""
    import torch

    device = torch.device(device or "cpu")
    n = n or (512 if device.type == "cpu" else 4096)
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype, torch.float32)
    x = torch.randn(n, n, device=device, dtype=torch_dtype)
    y = torch.randn(n, n, device=device, dtype=torch_dtype)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    x @ y  # warm-up: library load, workspace
    sync()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        x @ y
        sync()
        best = min(best, time.perf_counter() - t0)
    threads = f", {torch.get_num_threads()} thread(s)" if device.type == "cpu" else ""
    what = "CPU" if device.type == "cpu" else torch.cuda.get_device_name(device)
    return Peak(
        2 * n**3 / best,
        f"measured {dtype} {n}x{n} matmul peak of this process on the {what}{threads}, not a datasheet figure",
        True,
    )


def peak_for(device: Any, dtype: str) -> Peak:
    """The peak MFU is taken against on ``device``: a known GPU's datasheet figure, else a measured one."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        known = datasheet_peak(torch.cuda.get_device_name(device), dtype)
        if known is not None:
            return known
    return measured_matmul_peak(device, dtype)


def declare_flops(per_sample: float, *, dtype: str = "bf16", device: Any = None) -> Peak:
    """Declare the model FLOPs one training sample costs (forward and backward); from now on every
    ``labkit.report`` that has ``samples_per_s`` also reports ``mfu``. ``dtype`` is the matmuls'
    dtype (it picks the datasheet peak); ``device`` defaults to ``labkit.device()``. Returns the
    peak, whose basis is also printed once."""
    global _declared
    if isinstance(per_sample, bool) or not isinstance(per_sample, int | float) or not per_sample > 0:
        raise ValueError(f"labkit.declare_flops: per_sample must be a positive number, not {per_sample!r}")
    if dtype not in DTYPES:
        raise ValueError(f"labkit.declare_flops: dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if device is None:
        from . import device as labkit_device

        device = labkit_device()
    peak = peak_for(device, dtype)
    _declared = _Declared(float(per_sample), peak)
    print(
        f"labkit: MFU is samples/s x {per_sample:,.0f} FLOPs per sample over {peak.flops_per_s / 1e12:.3g} "
        f"TFLOP/s, the {peak.basis}",
        flush=True,
    )
    return peak


def mfu_of(samples_per_s: Any) -> float | None:
    """MFU for a throughput, once FLOPs are declared; None before, or for a non-number."""
    if _declared is None or isinstance(samples_per_s, bool) or not isinstance(samples_per_s, int | float):
        return None
    return samples_per_s * _declared.per_sample / _declared.peak.flops_per_s


def forget() -> None:
    """Undo declare_flops (tests; a script that changes its model)."""
    global _declared
    _declared = None

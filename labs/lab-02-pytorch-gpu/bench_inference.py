"""lab-02-pytorch-gpu: inference throughput of a small CNN on the CPU and on the GPU, across
batch sizes, in fp32, fp16 or bf16 autocast.

    python bench_inference.py --precision fp32 --max_batch 32
    python bench_inference.py --precision bf16 --max_batch 1024 --image_size 128    # on a GPU

The CNN is built in code with random weights and fed random images: nothing is downloaded,
and the speed of a network does not depend on what its weights have learned. For each batch
size (1, 2, 4, ... max_batch) the script times forward passes on the CPU and, where there is
one, on the GPU, and reports one line per batch size through labkit: cpu_/gpu_samples_per_s,
cpu_/gpu_latency_ms and speedup, with the batch size as the step. It then checks that the
chosen precision's outputs match fp32's and that the GPU beat the CPU. Exits 0 when every
check that applies passed.

With "Record profile" (labkit.profile), the forward passes at the largest batch on the GPU (on
the CPU when there is none) are profiled: one profiler step per pass, the first of the warm-up
passes skipped, the other two discarded, then the first three timed passes recorded into
profile/rank0.trace.json. Those three passes run with the profiler on, so that batch's timing
includes a little of its overhead.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import statistics
import sys
import time
from dataclasses import dataclass

import torch
import torch.nn as nn

from gpudojo import labkit

PRECISIONS = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}
# Largest difference from the fp32 reference, relative to the reference's largest magnitude:
# about four times the format's machine epsilon (bf16 7.8e-3, fp16 9.8e-4). fp32 on a GPU is
# not exact either: cuDNN may run fp32 convolutions in TF32, which rounds inputs to fp16's 10
# mantissa bits, so it gets fp16's tolerance. Measured on a CPU across widths and image sizes:
# bf16 3e-3 to 6e-3, fp16 4e-4 to 8e-4.
TOLERANCE = {"fp32": 5e-3, "fp16": 5e-3, "bf16": 3e-2}
# The CPU is skipped at a batch size where one forward pass would take longer than this.
CPU_BATCH_LIMIT_S = 2.0
WARMUP = 3
# Profiler steps recorded by "Record profile": the first timed passes after the warm-up.
PROFILED_PASSES = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--precision", choices=list(PRECISIONS), default="fp32", help="autocast dtype (fp16: GPU only)")
    p.add_argument("--max_batch", type=int, default=32, help="largest batch of the sweep 1, 2, 4, ...")
    p.add_argument("--image_size", type=int, choices=[32, 64, 128, 224], default=64, help="height = width, pixels")
    p.add_argument("--width", type=int, choices=[8, 16, 32, 64], default=32, help="channels of the first stage")
    p.add_argument("--channels_last", action=argparse.BooleanOptionalAction, default=False, help="NHWC layout")
    p.add_argument("--seconds_per_point", type=float, default=0.25, help="timing budget per batch size and device")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.max_batch < 1:
        p.error("--max_batch must be at least 1")
    if args.seconds_per_point <= 0:
        p.error("--seconds_per_point must be positive")
    return args


# --- the model ---------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut; a 1x1 convolution on the shortcut when the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = (
            nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


def build_cnn(width: int, classes: int = 10) -> nn.Sequential:
    """A small ResNet-style CNN: a stride-2 stem, then three stages at 1, 2 and 4 times `width` channels."""
    return nn.Sequential(
        nn.Conv2d(3, width, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        BasicBlock(width, width, 1),
        BasicBlock(width, 2 * width, 2),
        BasicBlock(2 * width, 4 * width, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4 * width, classes),
    )


def flops_per_image(model: nn.Module, image_size: int) -> float:
    """Multiply-adds x 2 of every convolution and linear layer for one image, from a hooked pass (FLOP)."""
    total = 0.0

    def count(module: nn.Module, _inputs: tuple, output: torch.Tensor) -> None:
        nonlocal total
        if isinstance(module, nn.Conv2d):
            per_output = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
            total += 2.0 * output[0].numel() * per_output
        elif isinstance(module, nn.Linear):
            total += 2.0 * module.in_features * module.out_features

    hooks = [m.register_forward_hook(count) for m in model.modules() if isinstance(m, nn.Conv2d | nn.Linear)]
    with torch.inference_mode():
        model(torch.zeros(1, 3, image_size, image_size))
    for h in hooks:
        h.remove()
    return total


# --- timing ------------------------------------------------------------------------------------


@dataclass
class Timing:
    latency_ms: float  # median time of one batch, ms
    samples_per_s: float
    repeats: int


def autocast_for(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    dtype = PRECISIONS[precision]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def time_batches(model: nn.Module, x: torch.Tensor, precision: str, budget_s: float) -> Timing:
    """Median latency of one forward pass over x, after warm-up, within about budget_s seconds."""
    on_gpu = x.device.type == "cuda"
    times: list[float] = []
    with torch.inference_mode(), autocast_for(x.device, precision):
        for _ in range(WARMUP):  # cuDNN picks algorithms, the allocator caches blocks, oneDNN builds kernels
            model(x)
            labkit.profile_step()  # one profiler step per pass (nothing unless this point is profiled)
        if on_gpu:
            torch.cuda.synchronize(x.device)
        deadline = time.perf_counter() + budget_s
        while len(times) < 3 or (time.perf_counter() < deadline and len(times) < 1000):
            if on_gpu:
                # The GPU stamps each event when its stream reaches it: the interval runs from the
                # pass's first kernel to its last, including any wait for Python to launch the next.
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                model(x)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))  # ms
                labkit.profile_step()
            else:
                t0 = time.perf_counter()
                model(x)
                times.append((time.perf_counter() - t0) * 1e3)
            labkit.profile_step()
    latency = statistics.median(times)
    return Timing(latency_ms=latency, samples_per_s=x.shape[0] / (latency / 1e3), repeats=len(times))


def profile_point(where: str, batch: int, profiled: tuple[str, int]) -> labkit.ProfileCapture:
    """labkit.profile around one point of the sweep: it records (when the run asks) only at the
    profiled point, from the first timed pass on (the warm-up passes are its wait and warm-up)."""
    here = (where, batch) == profiled
    return labkit.profile(wait=1, warmup=WARMUP - 1, active=PROFILED_PASSES, enabled=None if here else False)


def outputs(model: nn.Module, x: torch.Tensor, precision: str) -> torch.Tensor:
    with torch.inference_mode(), autocast_for(x.device, precision):
        return model(x).float().cpu()


def relative_error(out: torch.Tensor, reference: torch.Tensor) -> float:
    return ((out - reference).abs().max() / reference.abs().max().clamp_min(1e-12)).item()


def batch_sizes(max_batch: int) -> list[int]:
    sizes, b = [], 1
    while b < max_batch:
        sizes.append(b)
        b *= 2
    return [*sizes, max_batch]


# --- the lab -----------------------------------------------------------------------------------


@labkit.record
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    labkit.seed_everything(args.seed)
    gpu = labkit.device() if torch.cuda.is_available() else None
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format

    # The precision each device runs: fp16 autocast is a GPU feature here; the CPU keeps fp32.
    cpu_precision = "fp32" if args.precision == "fp16" else args.precision
    gpu_precision = args.precision
    if gpu is not None:
        torch.cuda.set_device(gpu)  # CUDA events and streams below belong to the current device
        if args.precision == "bf16" and torch.cuda.get_device_capability(gpu) < (8, 0):
            print(f"{torch.cuda.get_device_name(gpu)} has no bf16 tensor cores (compute 8.0+): the GPU runs fp32")
            gpu_precision = "fp32"

    model = build_cnn(args.width).eval().to(memory_format=fmt)
    params = sum(p.numel() for p in model.parameters())
    flops = flops_per_image(model, args.image_size)
    print(
        f"CNN: {params:,} parameters, {flops / 1e6:.0f} MFLOP per {args.image_size}x{args.image_size} image; "
        f"CPU: {torch.get_num_threads()} threads, {cpu_precision}"
        + (f"; GPU: {torch.cuda.get_device_name(gpu)}, {gpu_precision}" if gpu else "; no GPU: CPU only")
        + (" (fp16 needs a GPU)" if args.precision == "fp16" and gpu is None else "")
    )
    if gpu is not None:
        torch.backends.cudnn.benchmark = True  # try cuDNN's algorithms once per shape (in the warm-up)
        # Module.to() moves the module in place and returns it, so the GPU gets its own copy and
        # `model` stays on the CPU for the CPU half of the comparison.
        gpu_model = copy.deepcopy(model).to(gpu)

    # "Record profile" records the passes at the largest batch on the device this lab is about.
    profiled = ("gpu" if gpu is not None else "cpu", args.max_batch)
    print(f"\n{'batch':>6} {'CPU ms':>9} {'CPU img/s':>10} {'GPU ms':>9} {'GPU img/s':>10} {'GPU/CPU':>8}")
    last_cpu: tuple[int, float] | None = None  # (batch, latency in s) of the last CPU point
    compared: tuple[int, float, float] | None = None  # (batch, CPU img/s, GPU img/s) at the largest common batch
    gpu_full_at: int | None = None  # the batch size that ran out of GPU memory, if one did
    for batch in batch_sizes(args.max_batch):
        images = torch.randn(batch, 3, args.image_size, args.image_size).to(memory_format=fmt)
        values: dict[str, float] = {}  # reported with the batch size as the step
        cpu_t = None
        predicted = last_cpu[1] * batch / last_cpu[0] if last_cpu else 0.0
        with profile_point("cpu", batch, profiled) as prof:
            if predicted <= CPU_BATCH_LIMIT_S:
                cpu_t = time_batches(model, images, cpu_precision, args.seconds_per_point)
                last_cpu = (batch, cpu_t.latency_ms / 1e3)
                values.update(cpu_latency_ms=cpu_t.latency_ms, cpu_samples_per_s=cpu_t.samples_per_s)
            elif prof.requested:
                print(f"(Record profile: the CPU skips batch {batch}, so nothing was profiled; lower max_batch)")
        gpu_t = None
        if gpu is not None and gpu_full_at is None:
            try:
                # Copy the batch in before the clock starts: this lab times the model, not PCIe.
                with profile_point("gpu", batch, profiled):
                    gpu_t = time_batches(gpu_model, images.to(gpu), gpu_precision, args.seconds_per_point)
            except torch.cuda.OutOfMemoryError:
                gpu_full_at = batch
                torch.cuda.empty_cache()
        if gpu_t is not None:
            values.update(gpu_latency_ms=gpu_t.latency_ms, gpu_samples_per_s=gpu_t.samples_per_s)
            if cpu_t is not None:
                values["speedup"] = gpu_t.samples_per_s / cpu_t.samples_per_s
                compared = (batch, cpu_t.samples_per_s, gpu_t.samples_per_s)
        if values:  # nothing when the CPU was skipped and there is no GPU
            labkit.report(batch, **values)
        cells = [
            f"{cpu_t.latency_ms:9.2f} {cpu_t.samples_per_s:10,.0f}" if cpu_t else f"{'skipped':>9} {'':>10}",
            f"{gpu_t.latency_ms:9.3f} {gpu_t.samples_per_s:10,.0f}" if gpu_t else f"{'-':>9} {'-':>10}",
            f"{values['speedup']:7.1f}x" if "speedup" in values else f"{'-':>8}",
        ]
        print(f"{batch:>6} " + " ".join(cells), flush=True)
    if last_cpu and last_cpu[0] != args.max_batch:
        print(f"(CPU skipped above batch {last_cpu[0]}: one pass would take over {CPU_BATCH_LIMIT_S:.0f} s)")
    if gpu_full_at is not None:
        print(f"(GPU out of memory at batch {gpu_full_at}: the sweep stopped there on the GPU)")

    # Does the chosen precision give the same answers as fp32? One probe batch, fp32 on the CPU
    # as the reference.
    probe = torch.randn(8, 3, args.image_size, args.image_size).to(memory_format=fmt)
    reference = outputs(model, probe, "fp32")
    errors = {"cpu": (cpu_precision, relative_error(outputs(model, probe, cpu_precision), reference))}
    if gpu is not None:
        gpu_out = outputs(gpu_model, probe.to(gpu), gpu_precision)
        errors["gpu"] = (gpu_precision, relative_error(gpu_out, reference))
    labkit.report(None, **{f"{where}_rel_error": err for where, (_, err) in errors.items()})
    print()
    verdicts: list[bool | None] = []

    def verdict(check: str, ok: bool | None, detail: str) -> None:
        labkit.check(check, ok, detail)
        verdicts.append(ok)

    if args.precision == "fp16" and gpu is None:
        verdict("matches-fp32", None, "fp16 autocast needs a GPU here; the CPU ran fp32")
    else:
        detail = "; ".join(
            f"{where} {prec}: largest difference {err:.2e} of the largest output (tolerance {TOLERANCE[prec]:.0e})"
            for where, (prec, err) in errors.items()
        )
        verdict("matches-fp32", all(err <= TOLERANCE[prec] for prec, err in errors.values()), detail)

    if gpu is None:
        verdict("gpu-faster", None, "no GPU: only the CPU was measured")
    elif compared is None:
        verdict("gpu-faster", False, "the CPU was not measured at any batch size, so there is nothing to compare")
    else:
        batch, cpu_rate, gpu_rate = compared
        verdict(
            "gpu-faster",
            gpu_rate > cpu_rate,
            f"batch {batch}: GPU {gpu_rate:,.0f} images/s, CPU {cpu_rate:,.0f} images/s ({gpu_rate / cpu_rate:.1f}x)",
        )
    return 1 if False in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())

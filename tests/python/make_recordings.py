"""Regenerate tests/data/gpu/*.jsonl: synthetic stand-ins for recordings of real machines.

The recorder of `gpudojo probe --record` runs over the simulated machines of fake_nvml
(this repository's CI has no GPU), and each reading's counters are replaced by a training
workload's: a model loading (memory rising in steps), training plateaus with data-loader
stalls, evaluation pauses, checkpoints (the copy out over PCIe). The values follow from a
fixed seed, so regenerating gives the same files. Each file's header says `"synthetic":
true`, and the UI says "synthetic recording", until recordings made on real GPUs with
`gpudojo probe --record` (same format, same replay) replace them.

    python tests/python/make_recordings.py
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "server"))

from fake_nvml import MACHINES  # noqa: E402
from gpudojo.gpu.models import GpuFacts, GpuSample  # noqa: E402
from gpudojo.gpu.nvml_backend import NvmlBackend  # noqa: E402
from gpudojo.gpu.replay import record  # noqa: E402

OUT = HERE.parent / "data" / "gpu"
RATE_HZ = 2.0
START = 1796000000.0  # simulated wall clock of the first sample (unix s)
GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True)
class Job:
    """A training job on some GPUs: its phases as (end s, kind) and its memory (GiB)."""

    gpus: tuple[int, ...]
    phases: tuple[tuple[float, str], ...]  # kinds: idle, load, train, eval, ckpt, serve
    weights_gib: float
    optimizer_gib: float
    activations_gib: float
    stall_every_s: float = 7.0  # a data-loader stall (one low reading) this often in training

    def phase(self, t: float) -> tuple[str, float, float]:
        """The phase at ``t`` (s), with the time into it and its length (s)."""
        begin = 0.0
        for end, kind in self.phases:
            if t < end:
                return kind, t - begin, end - begin
            begin = end
        return self.phases[-1][1], t - begin, 1.0


TRAIN_EVAL_CKPT = ((3, "idle"), (9, "load"), (36, "train"), (42, "eval"), (54, "train"), (57, "ckpt"), (60, "train"))
DDP_PAIR = ((2, "idle"), (8, "load"), (30, "train"), (37, "eval"), (50, "train"), (53, "ckpt"), (60, "train"))
JOB_A = ((2, "idle"), (7, "load"), (25, "train"), (31, "eval"), (50, "train"))
JOB_B = ((12, "idle"), (18, "load"), (38, "train"), (41, "ckpt"), (50, "train"))

MACHINE_JOBS: dict[str, tuple[float, list[Job], str]] = {
    "1gpu-rtx4090": (
        60.0,
        [
            Job(
                (0,),
                ((3, "idle"), (9, "load"), (36, "train"), (42, "eval"), (54, "train"), (57, "ckpt"), (60, "train")),
                6,
                12,
                3.5,
            )
        ],
        "one GPU fine-tuning a model: load, train, evaluate, train, checkpoint",
    ),
    "2gpu-h100-nvlink": (
        60.0,
        [
            Job(
                (0, 1),
                ((2, "idle"), (8, "load"), (30, "train"), (37, "eval"), (50, "train"), (53, "ckpt"), (60, "train")),
                14,
                28,
                18,
            )
        ],
        "DDP on two GPUs: load, train, evaluate, train, checkpoint (rank 0 writes)",
    ),
    "8gpu-a100-mig": (
        50.0,
        [
            Job((0,), ((50, "serve"),), 0, 0, 0),
            Job((1, 2, 3), JOB_A, 12, 24, 16),
            Job(
                (4, 5, 6, 7), ((12, "idle"), (18, "load"), (38, "train"), (41, "ckpt"), (50, "train")), 18, 36, 14, 9.0
            ),
        ],
        "GPU 0 serving on its MIG slices; GPUs 1-3 one DDP job (with an eval pause), GPUs 4-7 another "
        "starting later (with a checkpoint)",
    ),
}


class Workload:
    """The counters of every GPU of a machine running ``jobs``, one reading at a time."""

    def __init__(self, name: str, facts: list[GpuFacts], jobs: list[Job]) -> None:
        self.facts = {f.index: f for f in facts}
        self.job_of = {i: job for job in jobs for i in job.gpus}
        self.rng = {f.index: random.Random(f"{name}/{f.index}") for f in facts}
        self.temperature = {f.index: 33.0 for f in facts}

    def apply(self, t: float, samples: list[GpuSample]) -> list[GpuSample]:
        """Overwrite the counters the GPU reports (None stays None: unsupported)."""
        out = []
        for s in samples:
            values = self._reading(s.index, t)
            update = {k: v for k, v in values.items() if getattr(s, k) is not None}
            out.append(s.model_copy(update=update))
        return out

    def _reading(self, index: int, t: float) -> dict[str, float | int]:
        facts, rng, job = self.facts[index], self.rng[index], self.job_of.get(index)
        total = facts.memory_total_bytes or 16 * GIB
        limit = facts.power_limit_w or 300.0
        max_sm = facts.max_sm_clock_mhz or 1500
        kind, into, length = job.phase(t) if job else ("idle", t, 1.0)
        ctx = 0.45 if job and kind != "idle" else 0.0
        model = (job.weights_gib if job else 0) + ctx
        full = model + (job.optimizer_gib + job.activations_gib if job else 0)
        noise = rng.uniform(-1.0, 1.0)
        pcie_tx = pcie_rx = rng.uniform(0.05, 0.2) * 1e9
        if kind == "idle":
            util, mem, power, sm = 0.0, 0.0, 0.14 * limit, 210
        elif kind == "load":  # weights arrive in four steps, copied in over PCIe
            steps = min(4, math.floor(4 * into / length) + 1)
            util, mem, power, sm = rng.uniform(2, 12), ctx + job.weights_gib * steps / 4, 0.25 * limit, max_sm
            pcie_rx = rng.uniform(9, 12) * 1e9
        elif kind == "train":
            stall = job.stall_every_s and (t % job.stall_every_s) < 1.0 / RATE_HZ
            util = rng.uniform(50, 62) if stall else 96 + 3 * noise
            mem = full + 0.05 * noise  # the caching allocator holds a plateau
            power = limit * (0.55 if stall else 0.9 + 0.05 * noise)
            sm = max_sm - (60 if self.temperature[index] > 66 else 0)
            pcie_tx = pcie_rx = rng.uniform(1, 3) * 1e9
        elif kind == "eval":  # forward only: less compute, memory held by the allocator
            util, mem, power, sm = 45 + 8 * noise, full, 0.5 * limit, max_sm
        elif kind == "ckpt":  # rank 0 copies the state out; the others wait
            first = job.gpus[0] == index
            util, mem, power, sm = rng.uniform(0, 4), full, 0.3 * limit, max_sm
            if first:
                pcie_tx = rng.uniform(10, 13) * 1e9
        else:  # serve: bursty inference on the MIG slices
            used = sum(m.memory_used_bytes or 0 for m in facts.mig.instances) / GIB
            burst = 0.5 + 0.5 * math.sin(t / 3.0) ** 2
            util, mem, power, sm = 20 + 45 * burst + 5 * noise, used + 0.2 * burst, (0.3 + 0.3 * burst) * limit, max_sm
        # Temperature follows power with a lag of about 12 s.
        target = 30 + 45 * power / limit
        self.temperature[index] += (target - self.temperature[index]) * (1 - math.exp(-1 / (12 * RATE_HZ)))
        mem += 0.25  # what the driver keeps on every GPU, busy or not
        used_bytes = min(total, round(mem * GIB / MIB) * MIB)
        return {
            "utilization_gpu_pct": float(round(min(100.0, max(0.0, util)))),
            "utilization_memory_pct": float(round(min(100.0, max(0.0, util * 0.62)))),
            "memory_used_bytes": used_bytes,
            "memory_free_bytes": total - used_bytes,
            "power_w": round(power + 3 * noise, 1),
            "temperature_c": float(round(self.temperature[index])),
            "sm_clock_mhz": int(sm),
            "pcie_tx_bytes_per_s": float(round(pcie_tx, -6)),
            "pcie_rx_bytes_per_s": float(round(pcie_rx, -6)),
        }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, machine in MACHINES.items():
        duration, jobs, what = MACHINE_JOBS[name]
        nvml = machine()
        backend = NvmlBackend(nvml)
        workload = Workload(name, backend.inventory().gpus, jobs)
        now = [START]  # simulated wall clock: sleeping advances it, nothing waits

        def sample(backend=backend, nvml=nvml, workload=workload, now=now):
            nvml.tick()
            return workload.apply(now[0] - START, backend.sample())

        with open(OUT / f"{name}.jsonl", "w") as out:
            record(
                backend.inventory,
                sample,
                out,
                rate_hz=RATE_HZ,
                count=int(duration * RATE_HZ),
                clock=lambda now=now: now[0],
                sleep=lambda s, now=now: now.__setitem__(0, now[0] + s),
                synthetic=True,
                note=f"Synthetic stand-in (not measured): {what}",
            )
        print(f"wrote {OUT / name}.jsonl ({(OUT / f'{name}.jsonl').stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()

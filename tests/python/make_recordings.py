"""Regenerate tests/data/gpu/*.jsonl: the recorder of `gpudojo probe --record`, run over the
simulated machines of fake_nvml (this repository's CI has no GPU). A recording made on a
real GPU with `gpudojo probe --record` has the same format and replays the same way.

    python tests/python/make_recordings.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "server"))

from fake_nvml import MACHINES  # noqa: E402
from gpudojo.gpu.nvml_backend import NvmlBackend  # noqa: E402
from gpudojo.gpu.replay import record  # noqa: E402

OUT = HERE.parent / "data" / "gpu"
SAMPLES = 80
RATE_HZ = 4.0


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, machine in MACHINES.items():
        nvml = machine()
        backend = NvmlBackend(nvml)
        now = [1796000000.0]  # simulated wall clock: sleeping advances it, nothing waits

        def sample(backend=backend, nvml=nvml):
            nvml.tick()
            return backend.sample()

        with open(OUT / f"{name}.jsonl", "w") as out:
            record(
                backend.inventory,
                sample,
                out,
                rate_hz=RATE_HZ,
                count=SAMPLES,
                clock=lambda now=now: now[0],
                sleep=lambda s, now=now: now.__setitem__(0, now[0] + s),
            )
        print(f"wrote {OUT / name}.jsonl")


if __name__ == "__main__":
    main()

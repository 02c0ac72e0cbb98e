"""Real torch.profiler CPU traces of an MLP training loop, with_stack and record_shapes, as big
as a bench asks (every step really run and recorded: not copies of one step), cached under
bench/.cache (git-ignored) so that reruns reuse them.

    python real_profile_traces.py EVENTS [OUT]   records one trace of about EVENTS events

A short run of this loop writes about 430 trace events a step (python_function frames, cpu_ops
and the ProfilerStep annotation), which sets the number of steps; a long one writes some 510,
so ``1000000`` records 2,325 steps: 1,188,249 events, 395 MB.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"
# Trace events per recorded step of this loop on a short run (torch 2.13, CPU).
EVENTS_PER_STEP = 430


def record(out: Path, steps: int) -> Path:
    """Run ``steps`` training steps of a small MLP under torch.profiler (CPU activity,
    with_stack, record_shapes, all steps active after one wait and one warm-up) into ``out``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=steps, repeat=1),
        record_shapes=True,
        with_stack=True,
        on_trace_ready=lambda prof: prof.export_chrome_trace(str(tmp)),
    ) as prof:
        for i in range(steps + 2):
            x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 50 == 0:
                loss.item()  # a host read now and then, as a training loop logs its loss
            prof.step()
    tmp.replace(out)
    return out


def cached_trace(events: int) -> Path:
    """The cached trace of about ``events`` events, recorded (in a child process) if missing."""
    out = CACHE / f"mlp-{events}.json"
    if not out.exists():
        subprocess.run([sys.executable, __file__, str(events), str(out)], check=True)
    return out


if __name__ == "__main__":
    wanted = int(sys.argv[1])
    target = Path(sys.argv[2]) if len(sys.argv) > 2 else CACHE / f"mlp-{wanted}.json"
    t0 = time.perf_counter()
    record(target, max(1, wanted // EVENTS_PER_STEP))
    print(f"{target}: {target.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s")

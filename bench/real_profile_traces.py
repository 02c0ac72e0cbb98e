"""Real torch.profiler CPU traces of an MLP training loop, with_stack and record_shapes, as big
as a bench asks (every step really run and recorded: not copies of one step), cached under
bench/.cache (git-ignored) so that reruns reuse them.

    python real_profile_traces.py EVENTS [OUT]   records one trace of about EVENTS events

A short run of this loop writes about 430 trace events a step (python_function frames, cpu_ops
and the ProfilerStep annotation), which sets the number of steps; a long one writes some 510,
so ``1000000`` records 2,325 steps: 1,188,249 events, 395 MB.

One profiler session holds every recorded event in memory (some 250 MB a second of recording,
past 20 GB for ten million events), so a longer run is recorded in cycles of at most
CHUNK_STEPS steps (the profiler's schedule repeated: a new session per cycle, each exported on
its own, with one wait and one warm-up step between them) and the cycles' traceEvents are
spliced into one trace, in order: every event still really recorded. ``10000000`` records
23,260 steps: 10 cycles of 2,326.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"
# Trace events per recorded step of this loop on a short run (torch 2.13, CPU).
EVENTS_PER_STEP = 430
# Steps recorded by one profiler session at most (about 1.2 million events).
CHUNK_STEPS = 2400


def record(out: Path, steps: int) -> Path:
    """Run ``steps`` training steps of a small MLP under torch.profiler (CPU activity,
    with_stack, record_shapes, all steps active after one wait and one warm-up; in cycles of
    at most CHUNK_STEPS, spliced) into ``out``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    out.parent.mkdir(parents=True, exist_ok=True)
    cycles = -(-steps // CHUNK_STEPS)
    per_cycle = -(-steps // cycles)
    parts = [out.with_name(f"{out.name}.part{k}") for k in range(cycles)]
    written: list[Path] = []

    def export(prof: profile) -> None:
        prof.export_chrome_trace(str(parts[len(written)]))
        written.append(parts[len(written)])

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=per_cycle, repeat=cycles),
        record_shapes=True,
        with_stack=True,
        on_trace_ready=export,
    ) as prof:
        for i in range(cycles * (per_cycle + 2)):
            x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 50 == 0:
                loss.item()  # a host read now and then, as a training loop logs its loss
            prof.step()
    if len(written) != cycles:
        raise RuntimeError(f"{len(written)} of {cycles} profiler cycles exported")
    if cycles == 1:
        parts[0].replace(out)
        return out
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as f:
        for k, part in enumerate(parts):
            text = part.read_bytes()
            start = text.index(b'"traceEvents": [') + len(b'"traceEvents": [')
            end = text.rindex(b"]")
            if k == 0:
                f.write(text[:start])
                tail = text[end:]
            else:
                f.write(b",")
            f.write(text[start:end].rstrip())
            del text
            part.unlink()
        f.write(b"\n  " + tail)
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

"""Measure where memhog's training memory goes, with the PyTorch profiler's memory timeline.

    python profile_mem.py                          # a table
    python profile_mem.py --json                   # one JSON object, bytes per category
    python profile_mem.py --json --checkpointing   # the same run with activation checkpointing
    python profile_mem.py --json --optimizer sgd   # ... with SGD + momentum instead of Adam

The profiler (profile_memory, record_shapes and with_stack all on) records every allocation
and free of a few training steps from a fresh model. Walking its memory timeline gives the
bytes live at every moment; so far this script reports only their highest total, "peak".

TODO: its memory profiler also files each tensor under a category (parameter, gradient,
optimizer state, activation, ...). Report, in bytes (README.md says exactly what each means):

    parameters, gradients, optimizer_state, activations   and keep   peak
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import memhog
import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import Action, MemoryProfileTimeline

MIB = 2**20


def profile_training(cfg: memhog.Config) -> tuple[Any, torch.device]:
    """cfg.steps training steps of a fresh model and optimizer, recorded by the profiler."""
    device = memhog.pick_device(cfg)
    model = memhog.build_model(cfg)
    model.train()
    optimizer = memhog.build_optimizer(model, cfg)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    # The memory timeline needs all three options.
    with profile(activities=activities, profile_memory=True, record_shapes=True, with_stack=True) as prof:
        for step in range(cfg.steps):
            memhog.train_step(model, optimizer, *memhog.make_batch(cfg, step))
    if device.type == "cuda":
        device = torch.device("cuda", device.index if device.index is not None else torch.cuda.current_device())
    return prof, device


def total_timeline(prof: Any, device: torch.device) -> list[int]:
    """Bytes live (all categories together) after each instant of the profile, for one device."""
    memory = MemoryProfileTimeline(prof._memory_profile())
    # memory.timeline: (time ns, Action, (key, version), bytes) for every event, in time order.
    # memory.categories.get(key, version) says what a tensor is (a torch.profiler.
    # _memory_profiler.Category, or None); key is a TensorKey when the profiler could tie the
    # allocation to a tensor.
    now = 0
    rows: list[int] = []
    last_t = None
    for t, action, (key, _version), size in memory.timeline:
        if key.device != device:
            continue
        if last_t is not None and t != last_t:
            rows.append(now)  # everything that happened at last_t is in
        last_t = t
        if action in (Action.CREATE, Action.PREEXISTING):
            now += abs(size)
        elif action == Action.DESTROY:
            now -= abs(size)
        # Action.INCREMENT_VERSION: an in-place write, the same bytes (its category may change).
    rows.append(now)
    return rows


def measure(cfg: memhog.Config) -> dict[str, Any]:
    """Bytes per contributor for this configuration."""
    prof, device = profile_training(cfg)
    totals = total_timeline(prof, device)
    # TODO: parameters, gradients, optimizer_state and activations, by category.
    return {
        "device": str(device),
        "config": {k: getattr(cfg, k) for k in ("width", "depth", "batch", "steps", "optimizer", "checkpointing")},
        "peak": max(totals),
    }


def print_table(report: dict[str, Any]) -> None:
    cfg = report["config"]
    print(
        f"{report['device']}: width {cfg['width']}, depth {cfg['depth']}, batch {cfg['batch']}, "
        f"{cfg['optimizer']}, checkpointing {'on' if cfg['checkpointing'] else 'off'}, {cfg['steps']} steps"
    )
    for name in ("parameters", "gradients", "optimizer_state", "activations", "peak"):
        if name in report:
            print(f"  {name:16} {report[name] / MIB:9.2f} MiB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    memhog.add_config_args(p)
    p.set_defaults(steps=2)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args(argv)
    try:
        cfg = memhog.config_from(args)
    except ValueError as err:
        print(f"profile_mem.py: {err}", file=sys.stderr)
        return 2
    report = measure(cfg)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure where memhog's training memory goes, with the PyTorch profiler's memory timeline.

    python profile_mem.py                          # a table
    python profile_mem.py --json                   # one JSON object, bytes per category
    python profile_mem.py --json --checkpointing   # the same run with activation checkpointing
    python profile_mem.py --json --optimizer sgd   # ... with SGD + momentum instead of Adam

The profiler (profile_memory, record_shapes and with_stack all on) records every allocation
and free of a few training steps from a fresh model; its memory profiler then files each
tensor under a category: parameter, gradient, optimizer state, activation, input, temporary
or autograd detail. Walking that timeline gives the bytes live in each category at every
moment. The report, in bytes:

    parameters       the weights, live before the first step
    gradients        the gradient category at its highest (all of .grad, just before a step)
    optimizer_state  the optimizer-state category at its highest (after the first step)
    activations      the activation category at its highest (the end of a forward pass)
    peak             all categories together at their highest moment, and at_peak: what
                     each category held at that moment
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import memhog
import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import Action, Category, MemoryProfileTimeline, TensorKey

# The profiler's categories under the names of the report. None: a tensor it could not place.
NAMES = {
    Category.PARAMETER: "parameters",
    Category.GRADIENT: "gradients",
    Category.OPTIMIZER_STATE: "optimizer_state",
    Category.ACTIVATION: "activations",
    Category.INPUT: "inputs",
    Category.TEMPORARY: "temporaries",
    Category.AUTOGRAD_DETAIL: "autograd_detail",
    None: "unknown",
}
MIB = 2**20


def profile_training(cfg: memhog.Config) -> tuple[Any, torch.device]:
    """cfg.steps training steps of a fresh model and optimizer, recorded by the profiler."""
    device = memhog.pick_device(cfg)
    model = memhog.build_model(cfg)
    model.train()
    optimizer = memhog.build_optimizer(model, cfg)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    # The memory timeline needs all three: allocations, shapes (to follow tensors through
    # operators) and stacks (to tell the optimizer's tensors and the module's weights apart).
    with profile(activities=activities, profile_memory=True, record_shapes=True, with_stack=True) as prof:
        for step in range(cfg.steps):
            memhog.train_step(model, optimizer, *memhog.make_batch(cfg, step))
    if device.type == "cuda":
        device = torch.device("cuda", device.index if device.index is not None else torch.cuda.current_device())
    return prof, device


def category_timeline(prof: Any, device: torch.device) -> list[dict[str, int]]:
    """Bytes live per category after each instant of the profile, for one device."""
    memory = MemoryProfileTimeline(prof._memory_profile())
    live: dict[TensorKey, tuple[int, str]] = {}  # tensor -> (bytes, category name)
    now = dict.fromkeys(NAMES.values(), 0)
    rows: list[dict[str, int]] = []
    last_t = None
    for t, action, (key, version), size in memory.timeline:
        if key.device != device:
            continue
        if last_t is not None and t != last_t:
            rows.append(dict(now))  # everything that happened at last_t is in
        last_t = t
        if not isinstance(key, TensorKey):
            # A block the profiler saw but could not tie to a tensor: count it, uncategorised.
            if action in (Action.CREATE, Action.PREEXISTING):
                now["unknown"] += abs(size)
            elif action == Action.DESTROY:
                now["unknown"] -= abs(size)
            continue
        if action in (Action.CREATE, Action.PREEXISTING):
            if key not in live:
                name = NAMES.get(memory.categories.get(key, version), "unknown")
                live[key] = (size, name)
                now[name] += size
        elif action == Action.INCREMENT_VERSION and key in live:
            # An in-place write can change what a tensor is: its bytes move category.
            size0, old = live[key]
            new = NAMES.get(memory.categories.get(key, version + 1), "unknown")
            now[old] -= size0
            now[new] += size0
            live[key] = (size0, new)
        elif action == Action.DESTROY and key in live:
            size0, old = live.pop(key)
            now[old] -= size0
    rows.append(dict(now))
    return rows


def measure(cfg: memhog.Config) -> dict[str, Any]:
    """Bytes per contributor for this configuration (see the module docstring)."""
    prof, device = profile_training(cfg)
    rows = category_timeline(prof, device)
    totals = [sum(r.values()) for r in rows]
    i = max(range(len(rows)), key=totals.__getitem__)
    highest = {name: max(r[name] for r in rows) for name in NAMES.values()}
    report: dict[str, Any] = {
        "device": str(device),
        "config": {k: getattr(cfg, k) for k in ("width", "depth", "batch", "steps", "optimizer", "checkpointing")},
        # The weights exist before the first step; the parameter category's own highest would
        # also count the optimizer's scratch tensors that it files there for a moment.
        "parameters": rows[0]["parameters"],
        "gradients": highest["gradients"],
        "optimizer_state": highest["optimizer_state"],
        "activations": highest["activations"],
        "peak": totals[i],
        "at_peak": {k: v for k, v in rows[i].items() if v},
        "highest": {k: v for k, v in highest.items() if v},
    }
    if device.type == "cuda":
        # The caching allocator's own count; it includes what the profiler's run allocated.
        report["max_memory_allocated"] = torch.cuda.max_memory_allocated(device)
    return report


def print_table(report: dict[str, Any]) -> None:
    cfg = report["config"]
    print(
        f"{report['device']}: width {cfg['width']}, depth {cfg['depth']}, batch {cfg['batch']}, "
        f"{cfg['optimizer']}, checkpointing {'on' if cfg['checkpointing'] else 'off'}, {cfg['steps']} steps"
    )
    for name in ("parameters", "gradients", "optimizer_state", "activations", "peak"):
        print(f"  {name:16} {report[name] / MIB:9.2f} MiB")
    print("  at the peak:    " + ", ".join(f"{k} {v / MIB:.2f}" for k, v in report["at_peak"].items()) + " (MiB)")


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

"""labkit's memory capture: what a training script wraps to record its memory for the run
view's Memory tab.

    with labkit.memory_capture(context=labkit.model_context(model, optimizer=opt, micro_batch=64)) as mem:
        for step in range(steps):
            with labkit.memory_phase("forward"):
                loss = model(x).sum()
            ...
    print(mem.peak_bytes, mem.simulated_oom)

It records only when the run service asked for it (``GPUDOJO_RECORD_MEMORY=1``, the "record
memory" box) or when the script says ``force=True``, and writes one file per rank into
``$GPUDOJO_RUN_DIR/memory/`` (``./gpudojo-memory/`` when run by hand):

- CUDA: ``rank{R}.pickle``, torch's own snapshot (``torch.cuda.memory._dump_snapshot``; it
  opens at pytorch.org/memory_viz too), and beside it ``rank{R}.phases.json`` =
  ``{"phases": [[t_us, name], ...], "context": {...}}``. ``t_us`` is Unix time in
  microseconds, the clock of the snapshot's ``time_us`` (the caching allocator stamps each
  trace entry with an approximate clock and converts it to Unix microseconds when the
  snapshot is taken).
- CPU: ``rank{R}.cpu.json`` in gpudojo's format ``gpudojo-cpu-memory/1``, built from the
  PyTorch profiler's memory timeline, where every allocation carries a category (parameter,
  optimizer state, input, temporary, activation, gradient, autograd detail):

      {"format": "gpudojo-cpu-memory/1", "device": "cpu",
       "categories": ["parameter", ..., "unknown"],
       "events": [[t_us, "alloc" | "free", key, bytes, category_index], ...],
       "context": {...}, "phases": [[t_us, name], ...],
       "budget_bytes": 1048576, "budget_note": "...",            (only with a budget)
       "ooms": [{"t_us", "requested_bytes", "device_free_bytes", "simulated": true}]}

A CPU run cannot run out of a budget the way a GPU does, so with ``budget_bytes`` the capture
walks the timeline afterwards and records the first moment live bytes exceeded the budget as
a *simulated* OOM; training is not stopped. Its ``t_us`` is the moment of the allocation that
crossed the budget (which the analysis then counts as live, unlike a CUDA OOM's request) and
``device_free_bytes`` what the budget had left just before it. On CUDA the budget is real: the caching allocator
is capped with ``torch.cuda.set_per_process_memory_fraction`` and the run raises
``torch.OutOfMemoryError``, which the snapshot records (it is written first, then re-raised).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import runfolder

if TYPE_CHECKING:
    import torch

# cpu_events and live_bytes_walk are also what the gpu-memory-profiling exercise's checks measure with.
__all__ = ["MemoryCapture", "cpu_events", "live_bytes_walk", "memory_capture", "memory_phase", "model_context"]

RECORD_ENV = runfolder.RECORD_MEMORY_ENV
CPU_FORMAT = "gpudojo-cpu-memory/1"  # the same string as gpudojo.memory.snapshot.CPU_FORMAT
# The profiler's categories (torch.profiler._memory_profiler.Category) under the names the
# viewer shows, in the order torch's own memory plot stacks them: what lives for the whole
# run at the bottom. Allocations the profiler could not place go to the last, "unknown".
CPU_CATEGORIES = (
    "parameter",
    "optimizer state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd detail",
    "unknown",
)
UNKNOWN = len(CPU_CATEGORIES) - 1

_active: list[MemoryCapture] = []


def _recording_requested() -> bool:
    return os.environ.get(RECORD_ENV, "").strip() == "1"


def _memory_dir() -> Path:
    run_dir = os.environ.get(runfolder.RUN_DIR_ENV, "").strip()
    return runfolder.RunFolder(run_dir).memory_dir if run_dir else Path.cwd() / runfolder.HAND_RUN_MEMORY_DIR


def _now_us() -> int:
    """Unix time in microseconds: the clock of a CUDA snapshot's time_us."""
    return time.time_ns() // 1000


# --- the CPU timeline, as plain data ------------------------------------------------------


def cpu_events(timeline: Any, categories: Any, device: str = "cpu") -> list[list[Any]]:
    """Allocation events ``[t_us, "alloc" | "free", key, bytes, category_index]`` from a
    ``torch.profiler._memory_profiler.MemoryProfileTimeline``'s ``timeline`` and
    ``categories``, for one device.

    A storage is allocated when the profiler saw it created (or, PREEXISTING, at the first
    time of the timeline) and freed when it was destroyed. A new version of the same storage
    (an in-place write) is no new allocation; when the write changes the storage's category
    (torch moves its bytes from one category to the other), the interval is ended and a new
    one begun at the same moment, under the new category, so the bytes live stay the same.
    Allocations the profiler holds no tensor for all share one key; they are paired by size,
    which keeps the bytes live right at every moment though not which block was which.
    """
    import torch
    from torch.profiler._memory_profiler import Action, Category, TensorKey

    index = {
        Category.PARAMETER: 0,
        Category.OPTIMIZER_STATE: 1,
        Category.INPUT: 2,
        Category.TEMPORARY: 3,
        Category.ACTIVATION: 4,
        Category.GRADIENT: 5,
        Category.AUTOGRAD_DETAIL: 6,
    }
    wanted = torch.device(device)
    rows = [r for r in timeline if r[2][0].device == wanted]
    times = [int(t / 1000) for t, *_ in rows if t >= 0]  # ns -> us, as torch's own plot does
    t_first = min(times, default=0)

    def category(key: Any, version: int) -> int:
        return index.get(categories.get(key, version), UNKNOWN) if isinstance(key, TensorKey) else UNKNOWN

    events: list[list[Any]] = []
    live: dict[Any, tuple[str, int, int]] = {}  # TensorKey -> (our key, bytes, category)
    unknown_by_size: dict[int, list[str]] = {}
    unknown_count = 0
    for t_ns, action, (key, version), numbytes in rows:
        t = t_first if t_ns < 0 else int(t_ns / 1000)
        size = abs(int(numbytes))  # torch gives frees of untracked blocks as negative sizes
        if not isinstance(key, TensorKey):
            if action in (Action.CREATE, Action.PREEXISTING):
                unknown_count += 1
                name = f"u{unknown_count}"
                unknown_by_size.setdefault(size, []).append(name)
                events.append([t, "alloc", name, size, UNKNOWN])
            elif action == Action.DESTROY:
                waiting = unknown_by_size.get(size)
                if waiting:
                    events.append([t, "free", waiting.pop(), size, UNKNOWN])
            # INCREMENT_VERSION of an untracked block: the same bytes, nothing to record.
            continue
        if action in (Action.CREATE, Action.PREEXISTING):
            if key in live:
                continue  # already counted: not a second allocation
            name = f"s{key.storage.allocation_id}.t{key.id}"
            cat = category(key, version)
            live[key] = (name, size, cat)
            events.append([t, "alloc", name, size, cat])
        elif action == Action.INCREMENT_VERSION:
            if key not in live:
                continue
            name, size0, cat0 = live[key]
            cat = category(key, version + 1)
            if cat != cat0:
                events.append([t, "free", name, size0, cat0])
                name = f"{name}.v{version + 1}"
                live[key] = (name, size0, cat)
                events.append([t, "alloc", name, size0, cat])
        elif action == Action.DESTROY:
            if key in live:
                name, size0, cat0 = live.pop(key)
                events.append([t, "free", name, size0, cat0])
            else:  # allocated before the profiler started, and not seen as preexisting
                events.append([t, "free", f"s{key.storage.allocation_id}.t{key.id}", size, category(key, version)])
    return events


def live_bytes_walk(events: list[list[Any]], n_categories: int, budget_bytes: int | None = None) -> dict[str, Any]:
    """Bytes live over a CPU capture's events, read the way the server's analysis reads them
    (at equal times, frees before allocations; an unmatched free was live from the start).

    Returns ``peak_bytes`` and ``peak_t_us``, ``peak_by_category`` (bytes per category index at
    the peak), ``category_peaks`` (each category's own highest bytes, at whatever time), and
    ``oom``: the first allocation that took live bytes above ``budget_bytes``, or None.
    """

    def hashable(key: Any) -> Any:
        return tuple(key) if isinstance(key, list) else key

    live: dict[Any, tuple[int, int]] = {}
    by_cat = [0] * n_categories
    first: dict[Any, list[Any]] = {}
    for event in events:
        first.setdefault(hashable(event[2]), event)
    for key, (_, action, _, size, cat) in first.items():
        if action == "free":  # allocated before the capture began: live from its first moment
            live[key] = (int(size), int(cat))
            by_cat[int(cat)] += int(size)
    total = sum(by_cat)
    peak, peak_t, peak_by_cat = total, events[0][0] if events else 0, list(by_cat)
    cat_peaks = list(by_cat)
    oom = None
    i = 0
    while i < len(events):
        t = events[i][0]
        j = i
        while j < len(events) and events[j][0] == t:
            j += 1
        group = events[i:j]
        for _, action, key, _size, _cat in group:
            key = hashable(key)
            if action == "free" and key in live:
                size0, cat0 = live.pop(key)
                by_cat[cat0] -= size0
                total -= size0
        for _, action, key, size, cat in group:
            if action != "alloc":
                continue
            key = hashable(key)
            if budget_bytes is not None and oom is None and total + int(size) > budget_bytes:
                oom = {
                    "t_us": t,
                    "requested_bytes": int(size),
                    "device_free_bytes": max(budget_bytes - total, 0),
                    "simulated": True,
                }
            live[key] = (int(size), int(cat))
            by_cat[int(cat)] += int(size)
            total += int(size)
        if total > peak:
            peak, peak_t, peak_by_cat = total, t, list(by_cat)
        cat_peaks = [max(a, b) for a, b in zip(cat_peaks, by_cat, strict=True)]
        i = j
    return {
        "peak_bytes": peak,
        "peak_t_us": peak_t,
        "peak_by_category": peak_by_cat,
        "category_peaks": cat_peaks,
        "oom": oom,
    }


# --- the capture --------------------------------------------------------------------------


def _profiler_busy() -> str | None:
    """Why the CPU profiler cannot record memory now (a labkit.profile block, or the script's
    own torch.profiler, is already recording), or None."""
    from .profile import _active as profiles

    if profiles:
        return "labkit.profile is recording a trace in this process; record memory outside the profiled block"
    import torch.autograd.profiler as autograd_profiler

    if autograd_profiler._is_profiler_enabled:
        return "torch.profiler is already running in this process"
    return None


class MemoryCapture:
    """One recording of this process's memory; use through ``memory_capture()``.

    After the block: ``recording`` (whether anything was recorded), ``kind`` ("cuda" or
    "cpu"), ``path`` (the capture file, None when not saved), ``peak_bytes`` (CUDA:
    torch.cuda.max_memory_allocated during the block; CPU: the highest bytes live in the
    profiler's timeline), on CPU ``peak_by_category`` and ``category_peaks`` (bytes by
    category name, at the peak and each at its own highest), and ``simulated_oom`` (CPU with
    a budget: the first allocation over it, as recorded in the capture; else None).
    """

    def __init__(
        self,
        *,
        force: bool,
        max_entries: int,
        context: dict[str, Any] | None,
        budget_bytes: int | None,
        save: bool,
    ) -> None:
        if max_entries < 1:
            raise ValueError("memory_capture: max_entries must be at least 1")
        if budget_bytes is not None and budget_bytes <= 0:
            raise ValueError("memory_capture: budget_bytes must be positive, or None for no budget")
        self.recording = bool(force) or _recording_requested()
        self.max_entries = int(max_entries)
        self.context = dict(context or {})
        self.budget_bytes = int(budget_bytes) if budget_bytes is not None else None
        self.save = save
        self.kind: str | None = None
        self.path: Path | None = None
        self.phases: list[list[Any]] = []
        self.peak_bytes: int | None = None
        self.peak_by_category: dict[str, int] = {}
        self.category_peaks: dict[str, int] = {}
        self.simulated_oom: dict[str, Any] | None = None
        self._profiler: Any = None
        self._device: Any = None
        self._fraction_set = False

    # -- entering --

    def __enter__(self) -> MemoryCapture:
        if not self.recording:
            return self
        from gpudojo.labkit import device

        self._device = device()
        if self._device.type != "cuda" and (busy := _profiler_busy()):
            # The CPU timeline is recorded by torch.profiler, which runs once per process.
            print(f"labkit.memory_capture: memory not recorded: {busy}", file=sys.stderr, flush=True)
            self.recording = False
            return self
        self.kind = self._device.type
        if self.kind == "cuda":
            self._start_cuda()
        else:
            self._start_cpu()
        _active.append(self)
        return self

    def _start_cuda(self) -> None:
        import torch

        if self.budget_bytes is not None:
            total = torch.cuda.get_device_properties(self._device).total_memory
            fraction = min(self.budget_bytes / total, 1.0)
            # The allocator then refuses to hold more than this share of the GPU: an OOM the
            # run really hits (the CUDA context itself is outside the count).
            torch.cuda.set_per_process_memory_fraction(fraction, self._device)
            self._fraction_set = True
        torch.cuda.reset_peak_memory_stats(self._device)
        torch.cuda.memory._record_memory_history(
            enabled="all", context="all", stacks="python", max_entries=self.max_entries
        )

    def _start_cpu(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        # All three are required by the profiler's memory timeline.
        self._profiler = profile(
            activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True
        )
        self._profiler.__enter__()

    # -- leaving --

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if not self.recording or self.kind is None:
            return False
        if self in _active:
            _active.remove(self)
        try:
            if self.kind == "cuda":
                self._finish_cuda()
            else:
                self._finish_cpu()
        except Exception as err:
            if exc is None:
                raise
            # The block's own error matters more than a capture that could not be written.
            print(f"labkit.memory_capture: the capture was not written: {type(err).__name__}: {err}", file=sys.stderr)
        return False  # an exception of the block (an OOM too) goes on, after the capture is on disk

    def _target(self, suffix: str) -> Path:
        from gpudojo.labkit import rank

        folder = _memory_dir()
        folder.mkdir(parents=True, exist_ok=True)
        return folder / runfolder.capture_name(rank(), suffix)

    def _finish_cuda(self) -> None:
        import torch

        try:
            torch.cuda.synchronize(self._device)
            self.peak_bytes = int(torch.cuda.max_memory_allocated(self._device))
            if self.save:
                self.path = self._target(runfolder.CUDA_SNAPSHOT_SUFFIX)
                torch.cuda.memory._dump_snapshot(str(self.path))
                sidecar = self.path.with_suffix(".phases.json")
                doc = {"phases": self.phases, "context": self.context}
                if self.budget_bytes is not None:
                    doc["budget_bytes"] = self.budget_bytes
                sidecar.write_text(json.dumps(doc), encoding="utf-8")
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
            if self._fraction_set:
                torch.cuda.set_per_process_memory_fraction(1.0, self._device)

    def _finish_cpu(self) -> None:
        from torch.profiler._memory_profiler import MemoryProfileTimeline

        prof, self._profiler = self._profiler, None
        prof.__exit__(None, None, None)
        memory = MemoryProfileTimeline(prof._memory_profile())
        events = cpu_events(memory.timeline, memory.categories, "cpu")
        walk = live_bytes_walk(events, len(CPU_CATEGORIES), self.budget_bytes)
        self.peak_bytes = walk["peak_bytes"]
        self.peak_by_category = {name: b for name, b in zip(CPU_CATEGORIES, walk["peak_by_category"], strict=True) if b}
        self.category_peaks = {name: b for name, b in zip(CPU_CATEGORIES, walk["category_peaks"], strict=True) if b}
        self.simulated_oom = walk["oom"]
        if not self.save:
            return
        doc: dict[str, Any] = {
            "format": CPU_FORMAT,
            "device": "cpu",
            "categories": list(CPU_CATEGORIES),
            "events": events,
            "context": self.context,
            "phases": self.phases,
        }
        if self.budget_bytes is not None:
            doc["budget_bytes"] = self.budget_bytes
            doc["budget_note"] = (
                f"Simulated budget of {self.budget_bytes} bytes: a CPU run has no memory cap, so the capture was "
                "checked against the budget after the run. An OOM here is where a GPU with this much memory would "
                "have failed; training was not stopped."
            )
            doc["ooms"] = [self.simulated_oom] if self.simulated_oom else []
        self.path = self._target(runfolder.CPU_TIMELINE_SUFFIX)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
        tmp.replace(self.path)  # the server never sees half a file

    def mark(self, name: str) -> None:
        self.phases.append([_now_us(), str(name)])


def memory_capture(
    *,
    force: bool = False,
    max_entries: int = 200_000,
    context: dict[str, Any] | None = None,
    budget_bytes: int | None = None,
    save: bool = True,
) -> MemoryCapture:
    """Record this process's memory during a ``with`` block, when the run asked for it
    (GPUDOJO_RECORD_MEMORY=1) or ``force``; otherwise do nothing.

    ``max_entries``: CUDA trace entries kept (the newest win). ``context``: what the estimator
    needs to explain an OOM (see ``model_context``). ``budget_bytes``: on CUDA the allocator is
    capped there, on CPU the capture is checked against it afterwards (a simulated OOM).
    ``save=False`` measures (peak_bytes, ...) without writing a file. Sizes are bytes.
    """
    return MemoryCapture(force=force, max_entries=max_entries, context=context, budget_bytes=budget_bytes, save=save)


class memory_phase:  # lower case: it is used like a function, memory_phase("forward")
    """Mark the start of a named phase (e.g. "forward", "backward", "optimizer") in every
    capture now recording, at Unix time in microseconds, the clock of a CUDA snapshot.

    Call it to mark; use it in a ``with`` block to mark the enclosing phase again when the block
    ends. On CUDA the phases categorise the snapshot's allocations; a CPU capture keeps them
    too, but the profiler's own categories are finer. Without a capture it does nothing.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("labkit.memory_phase: name must be a non-empty string, e.g. 'forward'")
        self.name = name
        self._before = [c.phases[-1][1] if c.phases else None for c in _active]
        self._captures = list(_active)
        for c in self._captures:
            c.mark(name)

    def __enter__(self) -> memory_phase:
        return self

    def __exit__(self, *exc: Any) -> bool:
        for capture, before in zip(self._captures, self._before, strict=True):
            if capture.recording and capture in _active:
                capture.mark(before if before is not None else "outside phases")
        return False


_OPTIMIZERS = {"Adam": "adam", "AdamW": "adamw"}


def _optimizer_name(optimizer: Any) -> str:
    if isinstance(optimizer, str):
        return optimizer
    kind = type(optimizer).__name__
    if kind in _OPTIMIZERS:
        return _OPTIMIZERS[kind]
    if kind == "SGD":
        momentum = max((g.get("momentum", 0) or 0 for g in optimizer.param_groups), default=0)
        return "sgd-momentum" if momentum else "sgd"
    raise ValueError(
        f"labkit.model_context: no estimate for {kind}; pass optimizer= one of 'sgd', 'sgd-momentum', 'adam', 'adamw'"
    )


def model_context(
    model: torch.nn.Module,
    *,
    optimizer: Any = "adam",
    precision: str = "fp32",
    micro_batch: int = 1,
    layers: int = 1,
    checkpointing: bool = False,
    activation_bytes_per_sample: int = 0,
    zero_stage: int = 0,
    data_parallel: int | None = None,
) -> dict[str, Any]:
    """What the memory estimator needs to know about a training run, for ``memory_capture``'s
    ``context``: the model's parameter count (each shared parameter once) and the rest as given.

    ``optimizer``: a torch optimizer or one of "sgd", "sgd-momentum", "adam", "adamw".
    ``precision``: "fp32", "mixed-fp16", "mixed-bf16" or "bf16". ``activation_bytes_per_sample``:
    bytes of activations one sample keeps for backward without checkpointing (0: unknown).
    ``data_parallel``: ranks sharing the batch (default: WORLD_SIZE).
    """
    from gpudojo.labkit import world_size

    seen: set[int] = set()
    parameters = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            parameters += p.numel()
    return {
        "parameters": parameters,
        "optimizer": _optimizer_name(optimizer),
        "precision": precision,
        "micro_batch": int(micro_batch),
        "layers": int(layers),
        "checkpointing": bool(checkpointing),
        "activation_bytes_per_sample": int(activation_bytes_per_sample),
        "zero_stage": int(zero_stage),
        "data_parallel": int(data_parallel if data_parallel is not None else world_size()),
    }

"""labkit's profile capture: what a training script wraps to record a torch.profiler trace for
the run view's Profile section.

    with labkit.profile(wait=1, warmup=1, active=3) as prof:
        for batch in loader:
            train_step(batch)
            labkit.profile_step()           # or prof.step(): the next profiler step begins
    print(prof.path)                        # the trace written, or None

It records only when the run service asked for it (``GPUDOJO_RECORD_PROFILE=1``, the "Record
profile" box) or when the script says ``enabled=True``; ``enabled=False`` never records.
Otherwise the block costs nothing: torch is not even imported, and ``profile_step()`` is a
function call that returns at once.

What is recorded follows torch.profiler's schedule: the first ``wait`` steps run untouched, the
next ``warmup`` steps run with the profiler on but discarded (its own start-up cost stays out of
the figures), and the ``active`` steps after them are kept, each one a ``ProfilerStep#N`` span
(N counts the steps from 0). ``repeat`` cycles of wait + warmup + active are run (0: until the
block ends); each completed cycle replaces the file, so it holds the last one. Activities are
the CPU, plus CUDA where ``torch.cuda.is_available()``. If the block ends (normally or by an
exception) in the middle of the active steps, what was recorded so far is written before the
exception goes on; a block that ends before its first active step writes nothing and says so
on stderr.

One Chrome trace per rank (``N = labkit.rank()``) is written to
``$GPUDOJO_RUN_DIR/profile/rank<N>.trace.json``, or, run by hand, to
``./gpudojo-profiles/rank<N>.trace.json``; it is written under a temporary name and renamed,
so a reader never sees half a file. Open it in gpudojo's profile view (the run view's Profile
section, or the file browser for a trace in the workspace), at ui.perfetto.dev (drag the file
in), or in TensorBoard with the torch-tb-profiler plugin (a folder holding the file as
``<name>.pt.trace.json``); ``gpudojo profile summary FILE`` prints the same analysis.

One profiler at a time: torch.profiler keeps one session per process, and a second one started
inside the first takes it over and breaks both. So a ``profile()`` started while another
``profile()``, a CPU ``labkit.memory_capture`` (which records through the same profiler) or
the script's own torch.profiler is recording records nothing and says so once on stderr. Open
a memory capture outside a profiled block, never inside one. (A CUDA memory capture uses the
allocator's history, not the profiler: both can run together on a GPU.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .. import runfolder

__all__ = ["ProfileCapture", "profile", "profile_step"]

RECORD_ENV = runfolder.RECORD_PROFILE_ENV

# The captures now recording, innermost last (at most one: nesting is refused).
_active: list[ProfileCapture] = []
# Notes already printed: each is said once per process, however many blocks run into it.
_said: set[str] = set()


def _recording_requested() -> bool:
    return os.environ.get(RECORD_ENV, "").strip() == "1"


def _profile_dir() -> Path:
    run_dir = os.environ.get(runfolder.RUN_DIR_ENV, "").strip()
    return runfolder.RunFolder(run_dir).profile_dir if run_dir else Path.cwd() / runfolder.HAND_RUN_PROFILE_DIR


def _say_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        print(message, file=sys.stderr, flush=True)


def _profiler_in_use() -> str | None:
    """Why torch.profiler cannot start here now, or None when it can."""
    if _active:
        return "another labkit.profile block is already recording"
    from .memory import _active as memory_active

    if any(capture.kind == "cpu" for capture in memory_active):
        return "labkit.memory_capture is recording this process's memory with the CPU profiler"
    import torch.autograd.profiler as autograd_profiler

    if autograd_profiler._is_profiler_enabled:
        return "torch.profiler is already running in this process"
    return None


class ProfileCapture:
    """One recording of torch.profiler over a block of training steps; use through ``profile()``.

    ``requested``: whether the run (or ``enabled``) asked for a recording. ``recording``: whether
    the profiler ran. ``path``: the trace written (None when none was). ``steps``: how many steps
    ended in the block (``step()`` calls; ``profile_step()`` reaches a capture only while it
    records). ``recorded_steps``: the first and last ProfilerStep number in the file, or None.
    ``note``: why nothing was recorded, when it was asked for and nothing was.
    """

    def __init__(
        self,
        *,
        wait: int,
        warmup: int,
        active: int,
        repeat: int,
        record_shapes: bool,
        profile_memory: bool,
        with_stack: bool,
        enabled: bool | None,
    ) -> None:
        for name, value, least in (
            ("wait", wait, 0),
            ("warmup", warmup, 0),
            ("active", active, 1),
            ("repeat", repeat, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"labkit.profile: {name} must be a whole number >= {least}, not {value!r}")
        self.wait, self.warmup, self.active, self.repeat = wait, warmup, active, repeat
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.requested = _recording_requested() if enabled is None else bool(enabled)
        self.recording = False
        self.path: Path | None = None
        self.steps = 0
        self.recorded_steps: tuple[int, int] | None = None
        self.note: str | None = None
        self._target: Path | None = None
        self._profiler: Any = None
        self._in_step = False

    # -- entering --

    def __enter__(self) -> ProfileCapture:
        if not self.requested:
            return self
        busy = _profiler_in_use()
        if busy is not None:
            self.note = f"nothing recorded: {busy} (one profiler at a time)"
            _say_once(f"labkit.profile: {self.note}")
            return self
        from . import rank

        self._target = _profile_dir() / runfolder.trace_name(rank())
        self._start()
        _active.append(self)
        return self

    def _start(self) -> None:
        import torch
        from torch.profiler import ProfilerActivity, schedule
        from torch.profiler import profile as torch_profile

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self._profiler = torch_profile(
            activities=activities,
            schedule=schedule(wait=self.wait, warmup=self.warmup, active=self.active, repeat=self.repeat),
            on_trace_ready=self._export,
            record_shapes=self.record_shapes,
            profile_memory=self.profile_memory,
            with_stack=self.with_stack,
        )
        self._profiler.__enter__()
        self.recording = True

    # -- the steps --

    def step(self) -> None:
        """The step in progress has ended and the next begins (the profiler's schedule moves on)."""
        self.steps += 1
        if self._profiler is None:
            return
        self._in_step = True
        try:
            self._profiler.step()
        finally:
            self._in_step = False

    def _cycle_steps(self, last: int) -> tuple[int, int]:
        """The first and last active step of the cycle whose active steps end at ``last``."""
        cycle = self.wait + self.warmup + self.active
        first_active = last - last % cycle + self.wait + self.warmup
        return first_active, last

    def _export(self, prof: Any) -> None:
        """torch.profiler's on_trace_ready: the active steps of a cycle are over (or the block ended)."""
        assert self._target is not None
        # Called from step(), the cycle's last step is the one that just ended; from the exit, the
        # step in progress, which the block's end cut short.
        last = self.steps - 1 if self._in_step else self.steps
        self._target.parent.mkdir(parents=True, exist_ok=True)
        partial = self._target.with_name(self._target.name + ".tmp")
        prof.export_chrome_trace(str(partial))
        partial.replace(self._target)
        self.path = self._target
        self.recorded_steps = self._cycle_steps(last)

    # -- leaving --

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if self._profiler is None:
            return False
        if self in _active:
            _active.remove(self)
        prof, self._profiler = self._profiler, None
        try:
            prof.__exit__(None, None, None)  # in the active steps, this writes the trace (_export)
        except Exception as err:
            if exc is None:
                raise
            # The block's own error matters more than a trace that could not be written.
            print(f"labkit.profile: the trace was not written: {type(err).__name__}: {err}", file=sys.stderr)
            return False
        if self.path is None:
            self.note = (
                f"nothing recorded: the block ended after {self.steps} step(s), before the first active step "
                f"(step {self.wait + self.warmup}, after wait={self.wait} and warmup={self.warmup}); "
                "run more steps or lower wait and warmup"
            )
            _say_once(f"labkit.profile: {self.note}")
        else:
            first, last = self.recorded_steps or (0, 0)
            size_kib = self.path.stat().st_size / 1024
            print(f"labkit.profile: steps {first}-{last} recorded to {self.path} ({size_kib:,.0f} KiB)", flush=True)
        return False  # an exception of the block goes on, after the trace is on disk


def profile(
    *,
    wait: int = 1,
    warmup: int = 1,
    active: int = 3,
    repeat: int = 1,
    record_shapes: bool = True,
    profile_memory: bool = False,
    with_stack: bool = True,
    enabled: bool | None = None,
) -> ProfileCapture:
    """Record a torch.profiler trace of the steps of a ``with`` block, when the run asked for it
    (GPUDOJO_RECORD_PROFILE=1) or ``enabled=True``; otherwise do nothing.

    ``wait``, ``warmup``, ``active``: steps (calls of ``profile_step()``) skipped, run with the
    profiler on but discarded, and recorded; ``repeat``: cycles of those (0: until the block
    ends). ``record_shapes``: input shapes of every op. ``profile_memory``: bytes each op
    allocates and frees. ``with_stack``: the Python stack of every op (file:line), which the
    analysis uses to point at a line. See the module's docstring for where the file goes and
    how to open it.
    """
    return ProfileCapture(
        wait=wait,
        warmup=warmup,
        active=active,
        repeat=repeat,
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
        enabled=enabled,
    )


def profile_step() -> None:
    """End the step in progress in the innermost ``profile()`` block now recording, so a lab's loop
    need not hold the capture; without one it does nothing."""
    if _active:
        _active[-1].step()

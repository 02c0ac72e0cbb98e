"""labkit: the little a lab script needs from gpudojo, imported inside the training processes.

    from gpudojo import labkit

    @labkit.record                      # torchrun's error.json gets this rank's traceback
    def main() -> int:
        dist.init_process_group(backend=labkit.backend())
        device = labkit.device()
        ...
        labkit.report(step, loss=loss.item(), samples_per_s=rate)
        labkit.check("loss-falls", last < first, f"{first:.3f} -> {last:.3f}")

    with labkit.memory_capture(context=labkit.model_context(model, optimizer=opt)) as mem:
        ...                             # recorded when the run asks (or force=True): see labkit.memory

    labkit.declare_flops(per_sample=6 * n_weights, dtype="bf16")   # then report() adds mfu
                                        # to every samples_per_s: see labkit.mfu

    with labkit.profile(wait=1, warmup=1, active=3):
        for step in range(steps):
            ...
            labkit.profile_step()       # a torch.profiler trace when the run asks: see labkit.profile

labkit reports and chooses; it never wraps. A lab script calls ``torch.distributed``,
``DistributedDataParallel``, ``DistributedSampler``, autocast and GradScaler itself, exactly
as a training script outside gpudojo would, so that what the learner reads is what runs.

Where the numbers go: under the run service (which sets ``GPUDOJO_RUN_DIR``) every call
appends one JSON line to ``$GPUDOJO_RUN_DIR/metrics/rank{RANK}.jsonl``, flushed at once so
the UI can chart it while the run goes on:

    {"t": 1733150000.12, "rank": 0, "step": 12, "loss": 0.53, "samples_per_s": 4210.0}
    {"t": 1733150009.80, "rank": 0, "check": "loss-falls", "ok": true, "detail": "..."}

``t`` is Unix time in seconds. Run by hand in a terminal (no ``GPUDOJO_RUN_DIR``), the same
JSON goes to stdout after the prefix ``gpudojo-metric``. Values are JSON scalars; a NaN or
infinite float is written as null, since JSON has no such numbers.

Importing labkit does not import torch: the functions that need it import it when called.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .. import runfolder
from .memory import MemoryCapture, memory_capture, memory_phase, model_context
from .mfu import declare_flops, mfu_of
from .profile import ProfileCapture, profile, profile_step  # labkit.profile: the function, not the module

if TYPE_CHECKING:
    import torch

__all__ = [
    "MemoryCapture",
    "ProfileCapture",
    "backend",
    "check",
    "declare_flops",
    "device",
    "local_rank",
    "memory_capture",
    "memory_phase",
    "model_context",
    "profile",
    "profile_step",
    "rank",
    "record",
    "report",
    "seed_everything",
    "world_size",
]

# The run folder's contract (names of variables and files) is gpudojo.runfolder's.
RUN_DIR_ENV = runfolder.RUN_DIR_ENV
BACKEND_ENV = runfolder.BACKEND_ENV
STDOUT_PREFIX = runfolder.METRIC_LINE_PREFIX
# Keys a metric line uses for itself; a value under one of them would be misread.
RESERVED_KEYS = frozenset({"t", "rank", "step", "check"})

_lock = threading.Lock()
_files: dict[Path, IO[str]] = {}


# --- where this process is ---------------------------------------------------------------


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw.strip() else default
    except ValueError:
        raise RuntimeError(f"{name}={raw!r} is not a whole number; torchrun sets it: unset it to run alone") from None


def rank() -> int:
    """This process's global rank (torchrun's RANK; 0 when run alone)."""
    return _env_int("RANK", 0)


def world_size() -> int:
    """How many processes the job has (torchrun's WORLD_SIZE; 1 when run alone)."""
    return _env_int("WORLD_SIZE", 1)


def local_rank() -> int:
    """This process's rank on its own machine (torchrun's LOCAL_RANK; 0 when run alone)."""
    return _env_int("LOCAL_RANK", 0)


def backend() -> str:
    """The torch.distributed backend for this run: "nccl" with GPUs, "gloo" without.

    The run service decides and sets GPUDOJO_BACKEND; a script run by hand asks CUDA.
    """
    chosen = os.environ.get(BACKEND_ENV, "").strip()
    if chosen:
        return chosen
    import torch

    return "nccl" if torch.cuda.is_available() else "gloo"


def device() -> torch.device:
    """cuda:LOCAL_RANK when CUDA is available, else the CPU."""
    import torch

    if not torch.cuda.is_available():
        return torch.device("cpu")
    index, count = local_rank(), torch.cuda.device_count()
    if index >= count:
        raise RuntimeError(
            f"LOCAL_RANK is {index} but this machine shows {count} GPU(s) to the process: start at most "
            f"{count} process(es) per machine (nproc), or make more GPUs visible (CUDA_VISIBLE_DEVICES)"
        )
    return torch.device("cuda", index)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's (when installed) and torch's random generators, CPU and every GPU."""
    random.seed(seed)
    try:
        import numpy as np
    except ImportError:
        pass
    else:
        np.random.seed(seed % 2**32)
    import torch

    torch.manual_seed(seed)


# --- reporting ---------------------------------------------------------------------------


def _scalar(key: str, value: Any) -> bool | int | float | str | None:
    """A value as a JSON scalar: numbers, strings, bools and None pass; one-element tensors and
    NumPy scalars become Python numbers; anything else is a TypeError naming the key."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    item = getattr(value, "item", None)
    if callable(item):  # torch.Tensor, NumPy scalars and one-element arrays
        try:
            plain = item()
        except (ValueError, RuntimeError):
            shape = tuple(getattr(value, "shape", ()))
            raise TypeError(
                f"labkit: {key!r} is a {type(value).__name__} of shape {shape}, not one number; "
                f"report a single value (e.g. {key}=x.mean().item())"
            ) from None
        if isinstance(plain, bool | int | float):
            return _scalar(key, plain)
    raise TypeError(
        f"labkit: {key!r} is a {type(value).__name__}, not a JSON scalar; "
        "report a number, a string, a bool or None (convert with float() or int())"
    )


def _say(text: str) -> None:
    """One line to stdout in a single write: print() writes the text and the newline apart,
    and torchrun, which tails a rank's output file, can copy the line between the two
    (runfolder.rank_line); one write leaves it no gap, so a metric line always arrives whole."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _emit(record: dict[str, Any]) -> None:
    line = json.dumps(record, allow_nan=False)
    run_dir = os.environ.get(RUN_DIR_ENV, "").strip()
    if not run_dir:
        _say(f"{STDOUT_PREFIX} {line}")
        return
    path = runfolder.RunFolder(run_dir).metrics_file(record["rank"])
    with _lock:
        f = _files.get(path)
        if f is None or f.closed:
            path.parent.mkdir(parents=True, exist_ok=True)
            f = _files[path] = open(path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the process)
        f.write(line + "\n")
        f.flush()  # the run service tails this file: a line must be whole and visible at once


def report(step: int | None = None, **values: Any) -> None:
    """Record metric values (e.g. loss, samples/s) for this rank at a training step.

    Units are the script's, named in the lab's manifest. Raises TypeError for a value that is not
    a JSON scalar or for a key labkit uses itself (t, rank, step, check). Once the script has
    declared its model's FLOPs (``declare_flops``), a record with ``samples_per_s`` also gets
    ``mfu``, the fraction of the peak that throughput uses.
    """
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise TypeError(f"labkit.report: step must be an int or None, not {type(step).__name__}")
    if not values:
        raise TypeError("labkit.report: give at least one value, e.g. report(step, loss=0.5)")
    clash = sorted(RESERVED_KEYS & values.keys())
    if clash:
        raise TypeError(f"labkit.report: {', '.join(map(repr, clash))} is labkit's own key; rename the value")
    r = rank()
    record = {"t": time.time(), "rank": r, "step": step}
    record.update((key, _scalar(key, value)) for key, value in values.items())
    if "mfu" not in record and (mfu := mfu_of(record.get("samples_per_s"))) is not None:
        record["mfu"] = mfu  # once the script declared its FLOPs (labkit.declare_flops)
    _emit(record)


def check(id: str, ok: bool | None, detail: str = "") -> None:
    """Report whether a check passed (True), failed (False) or does not apply here (None).

    The lab's manifest lists the check with kind "reported"; report it once. A readable line,
    ``[PASS] id: detail``, also goes to stdout for whoever reads the log.
    """
    if not isinstance(id, str) or not id:
        raise TypeError("labkit.check: id must be a non-empty string, the check's id in lab.toml")
    plain = _scalar("ok", ok)
    if plain is not None and not isinstance(plain, bool):
        raise TypeError(f"labkit.check: ok must be True, False or None, not {ok!r}")
    word = {True: "PASS", False: "FAIL", None: "n/a "}[plain]
    _say(f"[{word}] {id}: {detail}")
    _emit({"t": time.time(), "rank": rank(), "check": id, "ok": plain, "detail": str(detail)})


def __getattr__(name: str) -> Any:
    # `record` is torch's own decorator, imported on first use so that importing labkit stays
    # free of torch (the Jupyter server may read this module's constants; it never imports torch).
    if name == "record":
        from torch.distributed.elastic.multiprocessing.errors import record

        return record
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "record"])

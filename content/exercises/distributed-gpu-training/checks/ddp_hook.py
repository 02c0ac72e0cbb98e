"""The check's observer: torchrun starts this file, and it runs the learner's script in the
same process after wrapping a few torch functions to record what each rank did.

    python -m torch.distributed.run ... ddp_hook.py /path/ddp_train.py --epochs 4 ...

Environment (set by the check):
    GPUDOJO_DDP_CHECK_DIR   folder for the records (one events file per process)
    GPUDOJO_DDP_CHECK_HOLD  "RANK:STEPS": in the first attempt (no restart yet), that rank
                            stops after that many optimizer steps and waits there until the
                            check kills it from outside (so the kill always lands mid-run,
                            however fast the training is)

What is recorded, per rank and attempt (TORCHELASTIC_RESTART_COUNT): the backend the process
group was created with, every torch.save / torch.load path, every os.replace / os.rename,
DistributedSampler.set_epoch calls, the devices DDP was given, each optimizer step, and at
the end a hash of the DDP module's parameters (from destroy_process_group, os._exit or the
script's return, whichever comes first). init_process_group gets a 20 s timeout unless the
script passes one, so ranks that wait for each other in vain fail instead of hanging. Rank
0 also prints one marker line per attempt, {"__check_attempt__": N}, so the check can split
torchrun's output into attempts. torchrun's error file (the JSON @record writes when the
script raises) is written whole or not at all: see "torchrun's error file" below.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import sys
import time
from datetime import timedelta

OUT = os.environ["GPUDOJO_DDP_CHECK_DIR"]
RANK = int(os.environ.get("RANK", "0"))
ATTEMPT = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0)
PID = os.getpid()
_real_exit = os._exit
_log = open(os.path.join(OUT, f"events.r{RANK}.a{ATTEMPT}.p{PID}.jsonl"), "a", buffering=1)  # noqa: SIM115


def event(kind: str, **fields) -> None:
    _log.write(json.dumps({"event": kind, "rank": RANK, "attempt": ATTEMPT, "pid": PID, "t": time.time(), **fields}))
    _log.write("\n")
    _log.flush()


event("start", argv=sys.argv[1:], agent=os.getppid())
if RANK == 0:
    print(json.dumps({"__check_attempt__": ATTEMPT}), flush=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.distributed_c10d as c10d  # noqa: E402
import torch.serialization  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402
from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402


def _path_of(f) -> str | None:
    if isinstance(f, (str, os.PathLike)):
        return os.path.abspath(os.fspath(f))
    name = getattr(f, "name", None)
    return os.path.abspath(name) if isinstance(name, str) else None


# --- checkpoints: who saves, who loads, what is renamed --------------------------------------

_real_save, _real_load = torch.save, torch.load


def save(obj, f, *args, **kwargs):
    event("save", path=_path_of(f))
    return _real_save(obj, f, *args, **kwargs)


def load(f, *args, **kwargs):
    event("load", path=_path_of(f))
    return _real_load(f, *args, **kwargs)


torch.save = torch.serialization.save = save
torch.load = torch.serialization.load = load

_real_replace, _real_rename = os.replace, os.rename


def replace(src, dst, *args, **kwargs):
    result = _real_replace(src, dst, *args, **kwargs)
    event("rename", src=_path_of(src), dst=_path_of(dst))
    return result


def rename(src, dst, *args, **kwargs):
    result = _real_rename(src, dst, *args, **kwargs)
    event("rename", src=_path_of(src), dst=_path_of(dst))
    return result


os.replace, os.rename = replace, rename

# --- torchrun's error file: written whole or not at all -------------------------------------
#
# When the check kills one rank, the other fails in its next collective and the learner's
# @record writes the exception to TORCHELASTIC_ERROR_FILE: open(path, "w"), then json.dump.
# Meanwhile torchrun's agent sees the killed rank, SIGTERMs the survivor and (recent PyTorch,
# 2.13 here) reads the survivor's error file as soon as it has died. A survivor ended between the
# open and the dump leaves an empty file, json.load fails in the agent, and torchrun exits with
# 1 (JSONDecodeError) instead of restarting the workers. So the error is written to a temporary
# file beside it and renamed into place: the agent finds the whole file or none (and then
# reports the signal).

from torch.distributed.elastic.multiprocessing.errors.error_handler import ErrorHandler  # noqa: E402

_real_record_exception = ErrorHandler.record_exception


class _ErrorFileAt(ErrorHandler):
    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def _get_error_file_path(self) -> str:
        return self.path


def record_exception(self, e):
    final = self._get_error_file_path()
    if not final:
        return _real_record_exception(self, e)
    folder, name = os.path.split(final)
    tmp = os.path.join(folder, f".{name}.{PID}.tmp")
    _real_record_exception(_ErrorFileAt(tmp), e)  # torch's own format, in the temporary file
    _real_replace(tmp, final)  # not the wrapped os.replace: this is no rename of the learner's
    return None


ErrorHandler.record_exception = record_exception

# --- the process group, the sampler, DDP --------------------------------------------------------

_real_init = c10d.init_process_group


def init_process_group(*args, **kwargs):
    # A collective that waits this long for a partner fails instead of hanging: ranks that
    # disagree on the step they resume from would otherwise wait forever. (Only if the
    # script sets no timeout of its own; the default is 30 minutes.)
    if "timeout" not in kwargs and len(args) < 3:
        kwargs["timeout"] = timedelta(seconds=float(os.environ.get("GPUDOJO_DDP_CHECK_PG_TIMEOUT", "20")))
    result = _real_init(*args, **kwargs)
    event("init", backend=str(dist.get_backend()), world_size=dist.get_world_size(), rank=dist.get_rank())
    return result


dist.init_process_group = c10d.init_process_group = init_process_group

_real_set_epoch = DistributedSampler.set_epoch


def set_epoch(self, epoch):
    event("set_epoch", epoch=int(epoch), num_replicas=int(self.num_replicas), sampler_rank=int(self.rank))
    return _real_set_epoch(self, epoch)


DistributedSampler.set_epoch = set_epoch

_models: list = []
_real_ddp_init = DistributedDataParallel.__init__


def ddp_init(self, module, *args, **kwargs):
    _real_ddp_init(self, module, *args, **kwargs)
    _models.append(self.module)
    first = next(self.module.parameters(), None)
    event(
        "ddp",
        device=str(first.device) if first is not None else None,
        device_ids=[str(d) for d in (self.device_ids or [])],
    )


DistributedDataParallel.__init__ = ddp_init

# --- optimizer steps, and the hold before the kill -----------------------------------------------

_steps = 0
_hold = os.environ.get("GPUDOJO_DDP_CHECK_HOLD", "")
HOLD_RANK, HOLD_STEPS = (int(v) for v in _hold.split(":")) if _hold else (-1, -1)


def after_step(optimizer, args, kwargs) -> None:
    global _steps
    _steps += 1
    event("step", n=_steps)
    if ATTEMPT == 0 and RANK == HOLD_RANK and _steps == HOLD_STEPS:
        event("hold", steps=_steps)
        tmp = os.path.join(OUT, f".hold.r{RANK}.tmp")
        with open(tmp, "w") as f:
            json.dump({"pid": PID, "rank": RANK, "steps": _steps}, f)
        _real_replace(tmp, os.path.join(OUT, f"hold.r{RANK}.json"))
        time.sleep(600)  # the check kills this process (SIGKILL) while it waits here


register_optimizer_step_post_hook(after_step)

# --- the end: a digest of the parameters ---------------------------------------------------------

_done = False


def record_parameters(where: str) -> None:
    global _done
    if _done:
        return
    _done = True
    if not _models:
        event("end", where=where, steps=_steps, digest=None)
        return
    h = hashlib.sha256()
    total, count = 0.0, 0
    with torch.no_grad():
        for name, p in _models[-1].named_parameters():
            t = p.detach().to("cpu", torch.float64).contiguous()
            h.update(name.encode())
            h.update(t.numpy().tobytes())
            total += float(t.sum())
            count += t.numel()
    event("end", where=where, steps=_steps, digest=h.hexdigest(), checksum=total, numel=count)


_real_destroy = c10d.destroy_process_group


def destroy_process_group(*args, **kwargs):
    record_parameters("destroy_process_group")
    return _real_destroy(*args, **kwargs)


dist.destroy_process_group = c10d.destroy_process_group = destroy_process_group


def _exit(code):
    record_parameters("os._exit")
    _log.flush()
    _real_exit(code)


os._exit = _exit

# --- run the learner's script as __main__ --------------------------------------------------------

script = os.path.abspath(sys.argv[1])
sys.argv = [script, *sys.argv[2:]]
sys.path[0] = os.path.dirname(script)
try:
    runpy.run_path(script, run_name="__main__")
finally:
    record_parameters("exit")
    _log.flush()

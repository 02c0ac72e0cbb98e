"""The check's observer for train.py: the check starts this file, and it runs the learner's
script in the same process after wrapping torch.load and hooking every optimizer step.

    python train_hook.py /path/train.py --config cfg.json --steps 12 --ckpt-dir DIR --resume

GPUDOJO_TRAIN_RECORD (set by the check) names the file the records go to, one JSON line
each: {"event": "load", "path": ...} for every torch.load, {"event": "step"} for every
optimizer step. Nothing here is an expected answer: the check keeps those in its own memory.
"""

from __future__ import annotations

import json
import os
import runpy
import sys

_log = open(os.environ["GPUDOJO_TRAIN_RECORD"], "a", buffering=1)  # noqa: SIM115


def event(kind: str, **fields) -> None:
    _log.write(json.dumps({"event": kind, **fields}) + "\n")
    _log.flush()


import torch  # noqa: E402
import torch.serialization  # noqa: E402
from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: E402

_real_load = torch.load


def load(f, *args, **kwargs):
    path = os.path.abspath(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", None)
    event("load", path=path if isinstance(path, str) else None)
    return _real_load(f, *args, **kwargs)


torch.load = torch.serialization.load = load
register_optimizer_step_post_hook(lambda optimizer, args, kwargs: event("step"))

script = os.path.abspath(sys.argv[1])
sys.argv = [script, *sys.argv[2:]]
sys.path[0] = os.path.dirname(script)
try:
    runpy.run_path(script, run_name="__main__")
finally:
    _log.flush()

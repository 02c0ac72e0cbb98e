"""Where a run can run: this machine (the run service's LocalLauncher), torchrun across
nodes, Slurm, Kubernetes. Each engine beyond this machine implements base.Engine; the run
service looks it up here by the request's ``where.engine``."""

from __future__ import annotations

from functools import cache

from ..models import EngineInfo
from .base import Engine

TITLES = {
    "local": "This machine",
    "torchrun-nodes": "torchrun across nodes",
    "slurm": "Slurm",
    "kubernetes": "Kubernetes",
}


@cache
def engine(name: str) -> Engine:
    """The engine called ``name`` (not "local": that is the run service's own launcher)."""
    if name == "torchrun-nodes":
        from .nodes import NodesEngine

        return NodesEngine()
    if name == "slurm":
        from .slurm import SlurmEngine

        return SlurmEngine()
    if name == "kubernetes":
        from .kubernetes import KubernetesEngine

        return KubernetesEngine()
    raise KeyError(name)


def engine_infos() -> list[EngineInfo]:
    """Every engine with whether it can run from this machine, and why not. Slow probes
    (scontrol ping, a kubeconfig) run here: call it off the event loop."""
    infos = [EngineInfo(name="local", title=TITLES["local"], available=True, reason="torchrun on this machine")]
    for name in ("torchrun-nodes", "slurm", "kubernetes"):
        ok, reason = engine(name).availability()
        infos.append(EngineInfo(name=name, title=TITLES[name], available=ok, reason=reason))  # type: ignore[arg-type]
    return infos

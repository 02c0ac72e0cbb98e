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


ENGINE_NAMES = ("local", "torchrun-nodes", "slurm", "kubernetes")


def probe(name: str) -> EngineInfo:
    """Whether the engine ``name`` can run jobs from this machine, and why not. Slow probes
    (scontrol ping, reading a kubeconfig) run here: call it off the event loop, and not on every
    request (the run service keeps the answers for a while)."""
    if name == "local":
        return EngineInfo(name="local", title=TITLES["local"], available=True, reason="torchrun on this machine")
    # (ok, reason) or (ok, reason, detail): the detail is what a tool said, kept out of the reason.
    ok, reason, *rest = engine(name).availability()
    detail = str(rest[0]) if rest else ""
    info = EngineInfo(name=name, title=TITLES[name], available=ok, reason=reason, detail=detail)  # type: ignore[arg-type]
    if name == "torchrun-nodes":
        info.addresses = engine(name).addresses()  # type: ignore[attr-defined]
    return info


def engine_infos() -> list[EngineInfo]:
    """Every engine with whether it can run from this machine, and why not (probe() for each)."""
    return [probe(name) for name in ENGINE_NAMES]

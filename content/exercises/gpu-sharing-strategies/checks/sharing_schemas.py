"""Schemas the checks validate the learner's configurations against (pydantic, strict: no field
that is not documented, no value of the wrong type).

DevicePluginConfig: the NVIDIA Kubernetes device plugin's configuration file, version v1, from
the fields its README documents (https://github.com/NVIDIA/k8s-device-plugin, sections
"Configuring the NVIDIA device plugin binary" and "Shared Access to GPUs", read 2026-12-04) and
the Go types that parse it (api/config/v1: Config, Flags, Sharing, ReplicatedResources,
ReplicatedResource). Only what the README documents is accepted.

MpsPlan: the layout sharing.py's mps_config returns (the exercise's README), with environment
variable names restricted to those the NVIDIA MPS documentation lists
(https://docs.nvidia.com/deploy/mps/, "Appendix: Environment Variables", read 2026-12-04).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

# nvidia.com/gpu, or a MIG device as the mixed strategy names it: nvidia.com/mig-3g.40gb
RESOURCE_NAME = r"^nvidia\.com/(gpu|mig-[1-7]g\.[0-9]+gb(\+me)?)(\.shared)?$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PluginFlags(_Strict):
    passDeviceSpecs: StrictBool | None = None
    deviceListStrategy: StrictStr | list[StrictStr] | None = None  # envvar | volume-mounts | cdi-annotations | cdi-cri
    deviceIDStrategy: Literal["uuid", "index"] | None = None
    containerDriverRoot: StrictStr | None = None


class Flags(_Strict):
    migStrategy: Literal["none", "single", "mixed"] | None = None
    failOnInitError: StrictBool | None = None
    nvidiaDriverRoot: StrictStr | None = None
    gdsEnabled: StrictBool | None = None
    mofedEnabled: StrictBool | None = None
    plugin: PluginFlags | None = None


DeviceRef = Annotated[StrictInt, Field(ge=0)] | StrictStr


class ReplicatedResource(_Strict):
    name: Annotated[StrictStr, Field(pattern=RESOURCE_NAME)]
    replicas: Annotated[StrictInt, Field(ge=1)]  # the plugin refuses 0 or less
    rename: StrictStr | None = None
    devices: Literal["all"] | Annotated[StrictInt, Field(gt=0)] | list[DeviceRef] | None = None


class ReplicatedResources(_Strict):
    renameByDefault: StrictBool | None = None
    failRequestsGreaterThanOne: StrictBool | None = None
    resources: Annotated[list[ReplicatedResource], Field(min_length=1)]


class Sharing(_Strict):
    timeSlicing: ReplicatedResources | None = None
    mps: ReplicatedResources | None = None


class DevicePluginConfig(_Strict):
    version: Literal["v1"]
    flags: Flags | None = None
    sharing: Sharing | None = None


MpsEnvName = Literal[
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_ENABLE_PER_CTX_DEVICE_MULTIPROCESSOR_PARTITIONING",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    "CUDA_MPS_CLIENT_PRIORITY",
]


class MpsDaemon(_Strict):
    start: StrictStr
    stop: StrictStr
    env: dict[MpsEnvName, StrictStr]


class MpsClient(_Strict):
    name: StrictStr
    env: dict[MpsEnvName, StrictStr]


class MpsPlan(_Strict):
    daemon: MpsDaemon
    clients: list[MpsClient]


def problems(model: type[BaseModel], data) -> list[str]:
    """The schema's complaints about `data`, one line each ("where: what")."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            if loc and loc[-1] == "[key]":  # a dict key the schema does not allow: an env name
                where = ".".join(loc[:-2]) or "(top level)"
                out.append(f"{where}: {err['input']!r} is not a variable the MPS documentation defines")
                continue
            if err["type"] == "extra_forbidden":
                out.append(f"{'.'.join(loc)}: not a documented field")
                continue
            out.append(f"{'.'.join(loc) or '(top level)'}: {err['msg']}")
        return out
    return []

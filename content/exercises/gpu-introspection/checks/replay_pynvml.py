"""A replayed pynvml: the checks copy this file as ``pynvml.py`` into a folder that goes first
on the learner's PYTHONPATH, so ``import pynvml`` in gpu_info.py gets GPUs from a recording.

It serves the functions the exercise's README lists, with the names, return types and errors
of nvidia-ml-py (strings, not bytes; [current, pending] for the MIG mode; NVMLError
subclasses such as NVMLError_NotSupported chosen by error code). Anything else raises
AttributeError naming the README's list.

What it replays, chosen by environment variables:
- GPUDOJO_NVML_REPLAY=<file.jsonl>: a recording of gpudojo's probe (one inventory line, then
  sample lines). Static facts come from the inventory, memory in use from the first sample.
  A recording whose inventory lists no GPUs is a driver that sees none.
- GPUDOJO_NVML_REPLAY_ERROR=<NVMLError class suffix>, e.g. LibraryNotFound or
  DriverNotLoaded: nvmlInit raises that error, as on a machine without a working driver.
- neither: nvmlInit raises NVMLError_LibraryNotFound.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

# --- constants (the values of nvidia-ml-py) ---------------------------------------------

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_OPERATING_SYSTEM = 17
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_IN_USE = 19
NVML_ERROR_MEMORY = 20
NVML_ERROR_NO_DATA = 21
NVML_ERROR_UNKNOWN = 999

NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
NVML_NVLINK_MAX_LINKS = 36

NVML_TOPOLOGY_INTERNAL = 0
NVML_TOPOLOGY_SINGLE = 10
NVML_TOPOLOGY_MULTIPLE = 20
NVML_TOPOLOGY_HOSTBRIDGE = 30
NVML_TOPOLOGY_NODE = 40
NVML_TOPOLOGY_CPU = NVML_TOPOLOGY_NODE
NVML_TOPOLOGY_SYSTEM = 50

NVML_P2P_CAPS_INDEX_READ = 0
NVML_P2P_CAPS_INDEX_WRITE = 1
NVML_P2P_CAPS_INDEX_NVLINK = 2
NVML_P2P_CAPS_INDEX_ATOMICS = 3
NVML_P2P_CAPS_INDEX_PCI = 4
NVML_P2P_CAPS_INDEX_PROP = 4
NVML_P2P_STATUS_OK = 0
NVML_P2P_STATUS_NOT_SUPPORTED = 5

# --- errors: NVMLError(code) becomes the subclass for that code, as in nvidia-ml-py --------

_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_ALREADY_INITIALIZED: "Already Initialized",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_INSUFFICIENT_SIZE: "Insufficient Size",
    NVML_ERROR_INSUFFICIENT_POWER: "Insufficient External Power",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_IRQ_ISSUE: "Interrupt Request Issue",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_CORRUPTED_INFOROM: "Corrupted infoROM",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_RESET_REQUIRED: "GPU requires restart",
    NVML_ERROR_OPERATING_SYSTEM: "The operating system has blocked the request.",
    NVML_ERROR_LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.",
    NVML_ERROR_IN_USE: "In Use",
    NVML_ERROR_MEMORY: "Insufficient Memory",
    NVML_ERROR_NO_DATA: "No Data",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    _valClassMapping: dict[int, type] = {}

    def __new__(cls, value):
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self):
        return _MESSAGES.get(self.value, f"NVML error {self.value}")


def _make_error_classes() -> None:
    for name, value in list(globals().items()):
        if not name.startswith("NVML_ERROR_"):
            continue
        words = name[len("NVML_ERROR_") :].split("_")
        cls_name = "NVMLError_" + "".join(w.capitalize() for w in words)

        def new(cls, *args, _value=value):
            return NVMLError.__new__(cls, _value)

        cls = type(cls_name, (NVMLError,), {"__new__": new, "__module__": __name__})
        globals()[cls_name] = cls
        NVMLError._valClassMapping[value] = cls


_make_error_classes()


def _fail(code: int):
    raise NVMLError(code)


# --- the replayed machine -----------------------------------------------------------------

_PCIE_LEVELS = {
    "X": NVML_TOPOLOGY_INTERNAL,
    "PIX": NVML_TOPOLOGY_SINGLE,
    "PXB": NVML_TOPOLOGY_MULTIPLE,
    "PHB": NVML_TOPOLOGY_HOSTBRIDGE,
    "NODE": NVML_TOPOLOGY_NODE,
    "SYS": NVML_TOPOLOGY_SYSTEM,
}
_MIG_WORDS = {"enabled": NVML_DEVICE_MIG_ENABLE, "disabled": NVML_DEVICE_MIG_DISABLE}
_MIG_SLOTS = 7  # MIG devices per GPU on A100 and H100


class _Gpu:
    """A device handle: one GPU of the recording."""

    def __init__(self, facts: dict, sample: dict | None) -> None:
        self.facts = facts
        self.sample = sample or {}
        self.index = facts["index"]

    def __repr__(self) -> str:
        return f"<replayed nvmlDevice_t {self.index}>"


class _Mig:
    """A MIG device handle."""

    def __init__(self, parent: _Gpu, record: dict) -> None:
        self.parent = parent
        self.record = record

    def __repr__(self) -> str:
        return f"<replayed MIG nvmlDevice_t {self.parent.index}/{self.record.get('index')}>"


class _State:
    initialised = 0
    inventory: dict | None = None
    gpus: list[_Gpu] = []


_state = _State()


def _load() -> None:
    error = os.environ.get("GPUDOJO_NVML_REPLAY_ERROR")
    if error:
        cls = globals().get(f"NVMLError_{error}")
        raise (cls or NVMLError_Unknown)()  # noqa: F821 - made by _make_error_classes
    path = os.environ.get("GPUDOJO_NVML_REPLAY")
    if not path:
        _fail(NVML_ERROR_LIBRARY_NOT_FOUND)
    inventory, first_sample = None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("type") == "inventory" and inventory is None:
                inventory = record
            elif record.get("type") == "sample" and first_sample is None:
                first_sample = record
            if inventory is not None and first_sample is not None:
                break
    if inventory is None or not inventory.get("available", True):
        _fail(NVML_ERROR_DRIVER_NOT_LOADED)
    samples = {g["index"]: g for g in (first_sample or {}).get("gpus", [])}
    _state.inventory = inventory
    _state.gpus = [_Gpu(g, samples.get(g["index"])) for g in inventory.get("gpus", [])]


def _ready() -> None:
    if _state.initialised <= 0:
        _fail(NVML_ERROR_UNINITIALIZED)


def _gpu(handle) -> _Gpu:
    _ready()
    if not isinstance(handle, _Gpu):
        _fail(NVML_ERROR_INVALID_ARGUMENT)
    return handle


def _long_bus_id(bus_id: str) -> str:
    """NVML's 8-hex-digit domain spelling, as nvmlDeviceGetPciInfo gives it."""
    domain, _, rest = bus_id.partition(":")
    return f"{int(domain, 16):08X}:{rest}" if rest else bus_id


def _pci(bus_id: str) -> SimpleNamespace:
    domain, bus, dev = bus_id.replace(".", ":").split(":")[:3]
    return SimpleNamespace(
        busId=bus_id,
        busIdLegacy=bus_id,
        domain=int(domain, 16),
        bus=int(bus, 16),
        device=int(dev, 16),
        pciDeviceId=0,
        pciSubSystemId=0,
    )


# --- system -------------------------------------------------------------------------------


def nvmlInit():
    if _state.initialised <= 0:
        _load()
    _state.initialised += 1


def nvmlShutdown():
    _ready()
    _state.initialised -= 1


def nvmlSystemGetDriverVersion() -> str:
    _ready()
    version = _state.inventory.get("driver_version")
    if version is None:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    return version


def nvmlSystemGetCudaDriverVersion() -> int:
    _ready()
    text = _state.inventory.get("cuda_driver_version")
    if not text:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    major, _, minor = text.partition(".")
    return int(major) * 1000 + int(minor or 0) * 10


def nvmlDeviceGetCount() -> int:
    _ready()
    return len(_state.gpus)


def nvmlDeviceGetHandleByIndex(index):
    _ready()
    if not isinstance(index, int) or not 0 <= index < len(_state.gpus):
        _fail(NVML_ERROR_INVALID_ARGUMENT)
    return _state.gpus[index]


# --- facts of a device (GPU or MIG device) ------------------------------------------------


def nvmlDeviceGetName(handle) -> str:
    _ready()
    if isinstance(handle, _Mig):
        return handle.record.get("name") or "MIG device"
    return _gpu(handle).facts["name"]


def nvmlDeviceGetUUID(handle) -> str:
    _ready()
    if isinstance(handle, _Mig):
        return handle.record.get("uuid") or ""
    uuid = _gpu(handle).facts.get("uuid")
    if uuid is None:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    return uuid


def nvmlDeviceGetPciInfo(handle):
    g = _gpu(handle)
    bus = g.facts.get("pci_bus_id")
    if not bus:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    return _pci(_long_bus_id(bus))


def nvmlDeviceGetCudaComputeCapability(handle):
    g = handle.parent if isinstance(handle, _Mig) else _gpu(handle)
    cc = g.facts.get("compute_capability")
    if not cc:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    major, _, minor = cc.partition(".")
    return (int(major), int(minor or 0))


def nvmlDeviceGetMemoryInfo(handle, version=None):
    _ready()
    if isinstance(handle, _Mig):
        total = int(handle.record.get("memory_total_bytes") or 0)
        used = int(handle.record.get("memory_used_bytes") or 0)
        return SimpleNamespace(total=total, used=used, free=total - used)
    g = _gpu(handle)
    total = g.facts.get("memory_total_bytes")
    if total is None:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    used = g.sample.get("memory_used_bytes")
    free = g.sample.get("memory_free_bytes")
    used = int(used) if used is not None else 0
    free = int(free) if free is not None else int(total) - used
    return SimpleNamespace(total=int(total), used=used, free=free)


def nvmlDeviceIsMigDeviceHandle(handle) -> int:
    _ready()
    return 1 if isinstance(handle, _Mig) else 0


# --- MIG ----------------------------------------------------------------------------------


def _mig_state(g: _Gpu) -> dict:
    mig = g.facts.get("mig") or {}
    if mig.get("current") not in _MIG_WORDS or mig.get("pending") not in _MIG_WORDS:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    return mig


def nvmlDeviceGetMigMode(handle):
    mig = _mig_state(_gpu(handle))
    return [_MIG_WORDS[mig["current"]], _MIG_WORDS[mig["pending"]]]


def nvmlDeviceGetMaxMigDeviceCount(handle) -> int:
    _mig_state(_gpu(handle))
    return _MIG_SLOTS


def nvmlDeviceGetMigDeviceHandleByIndex(handle, index):
    g = _gpu(handle)
    mig = _mig_state(g)
    if mig["current"] != "enabled" or not isinstance(index, int) or not 0 <= index < _MIG_SLOTS:
        _fail(NVML_ERROR_INVALID_ARGUMENT)
    for record in mig.get("instances", []):
        if record.get("index") == index:
            return _Mig(g, record)
    _fail(NVML_ERROR_NOT_FOUND)  # an empty slot


def nvmlDeviceGetGpuInstanceId(handle) -> int:
    _ready()
    if not isinstance(handle, _Mig):
        _fail(NVML_ERROR_INVALID_ARGUMENT)
    return int(handle.record.get("gpu_instance_id"))


def nvmlDeviceGetComputeInstanceId(handle) -> int:
    _ready()
    if not isinstance(handle, _Mig):
        _fail(NVML_ERROR_INVALID_ARGUMENT)
    return int(handle.record.get("compute_instance_id"))


# --- NVLink and topology --------------------------------------------------------------------


def _link(g: _Gpu, link) -> dict:
    links = g.facts.get("nvlinks") or []
    if not links:
        _fail(NVML_ERROR_NOT_SUPPORTED)  # a GPU without NVLink answers this on link 0
    if not isinstance(link, int) or not 0 <= link < len(links):
        _fail(NVML_ERROR_INVALID_ARGUMENT)  # past its last link
    return links[link]


def nvmlDeviceGetNvLinkState(handle, link) -> int:
    record = _link(_gpu(handle), link)
    return NVML_FEATURE_ENABLED if record.get("active") else NVML_FEATURE_DISABLED


def nvmlDeviceGetNvLinkRemotePciInfo(handle, link):
    record = _link(_gpu(handle), link)
    remote = record.get("remote_pci_bus_id")
    if not remote:
        _fail(NVML_ERROR_NOT_SUPPORTED)
    return _pci(remote)  # the short (4-digit domain) spelling, as NVLink remotes often are


def _matrix_word(a: _Gpu, b: _Gpu) -> str:
    topology = _state.inventory.get("topology") or {}
    ids = topology.get("gpus") or []
    matrix = topology.get("matrix") or []
    try:
        return matrix[ids.index(a.index)][ids.index(b.index)]
    except (ValueError, IndexError):
        return "SYS"


def nvmlDeviceGetTopologyCommonAncestor(device1, device2) -> int:
    a, b = _gpu(device1), _gpu(device2)
    if a is b:
        return NVML_TOPOLOGY_INTERNAL
    # An NVLink-joined pair's PCIe path was not recorded: NVML's answer is then the widest.
    return _PCIE_LEVELS.get(_matrix_word(a, b), NVML_TOPOLOGY_SYSTEM)


def nvmlDeviceGetP2PStatus(device1, device2, p2pIndex) -> int:
    a, b = _gpu(device1), _gpu(device2)
    if p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK:
        return NVML_P2P_STATUS_OK if _matrix_word(a, b).startswith("NV") else NVML_P2P_STATUS_NOT_SUPPORTED
    return NVML_P2P_STATUS_OK


# --- anything else --------------------------------------------------------------------------


def __getattr__(name: str):
    raise AttributeError(
        f"pynvml.{name} is not served by gpudojo's replay of NVML: the exercise's README lists "
        "the pynvml functions gpu_info.py may use."
    )

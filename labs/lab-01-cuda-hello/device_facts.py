"""Device facts from two witnesses, and whether they agree.

NVML (through gpudojo's GPU probe) is the driver's management library: nvidia-smi reads the
same numbers, and it needs no CUDA context. The CUDA runtime is what a program that launches
kernels sees, after CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER have renumbered the GPUs.
The two are matched by PCI bus id, the one fact that does not depend on numbering.

`compare` is pure (data in, data out) so it can be tested without a GPU; `runtime_devices`
needs a GPU and CuPy or cuda.bindings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpudojo.gpu.models import GpuFacts

# cudaDeviceProp.totalGlobalMem leaves out memory the driver keeps for itself, so it is a
# little below NVML's total (about 0.5-1% on data-centre GPUs). A larger gap is a mismatch.
MEMORY_TOLERANCE = 0.05


class RuntimeUnavailable(RuntimeError):
    """The CUDA runtime could not be asked; the message says what was tried and why it failed."""


@dataclass(frozen=True)
class RuntimeDevice:
    """cudaDeviceProp of one device, in gpudojo's units (bytes)."""

    ordinal: int
    name: str
    compute_capability: str
    memory_total_bytes: int
    pci_bus_id: str
    uuid: str | None
    sm_count: int
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int | None
    registers_per_sm: int
    shared_bytes_per_block: int
    shared_bytes_per_block_optin: int
    shared_bytes_per_sm: int
    l2_bytes: int


@dataclass
class FactRow:
    fact: str
    nvml: str
    runtime: str
    agree: bool | None  # None: not compared (for example a MIG slice's memory)
    note: str = ""


@dataclass
class DeviceComparison:
    """One CUDA device and the NVML GPU at the same PCI address."""

    cuda_ordinal: int
    nvml_index: int | None
    rows: list[FactRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.nvml_index is not None and all(r.agree is not False for r in self.rows)


def format_bus_id(domain: int, bus: int, device: int) -> str:
    """The short upper-case form the probe uses, e.g. '0000:3B:00.0'."""
    return f"{domain:04X}:{bus:02X}:{device:02X}.0"


def format_uuid(raw: bytes) -> str:
    """16 raw bytes as NVML spells a GPU's UUID: 'GPU-' then 8-4-4-4-12 hex digits."""
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.split(b"\0", 1)[0].decode(errors="replace")
    return str(value)


def _from_cupy() -> list[RuntimeDevice]:
    import cupy

    rt = cupy.cuda.runtime
    devices = []
    for i in range(rt.getDeviceCount()):
        p = rt.getDeviceProperties(i)
        uuid = p.get("uuid")
        devices.append(
            RuntimeDevice(
                ordinal=i,
                name=_text(p["name"]),
                compute_capability=f"{p['major']}.{p['minor']}",
                memory_total_bytes=int(p["totalGlobalMem"]),
                pci_bus_id=format_bus_id(p["pciDomainID"], p["pciBusID"], p["pciDeviceID"]),
                uuid=format_uuid(bytes(uuid)) if uuid else None,
                sm_count=p["multiProcessorCount"],
                warp_size=p["warpSize"],
                max_threads_per_block=p["maxThreadsPerBlock"],
                max_threads_per_sm=p["maxThreadsPerMultiProcessor"],
                max_blocks_per_sm=p.get("maxBlocksPerMultiProcessor"),
                registers_per_sm=p["regsPerMultiprocessor"],
                shared_bytes_per_block=p["sharedMemPerBlock"],
                shared_bytes_per_block_optin=p["sharedMemPerBlockOptin"],
                shared_bytes_per_sm=p["sharedMemPerMultiprocessor"],
                l2_bytes=p["l2CacheSize"],
            )
        )
    return devices


def _from_cuda_bindings() -> list[RuntimeDevice]:
    from cuda.bindings import runtime as rt

    def call(result: tuple, what: str):
        err, *values = result
        if err != rt.cudaError_t.cudaSuccess:
            raise RuntimeUnavailable(f"{what} failed: {err.name}")
        return values[0]

    devices = []
    for i in range(call(rt.cudaGetDeviceCount(), "cudaGetDeviceCount")):
        p = call(rt.cudaGetDeviceProperties(i), "cudaGetDeviceProperties")
        devices.append(
            RuntimeDevice(
                ordinal=i,
                name=_text(p.name),
                compute_capability=f"{p.major}.{p.minor}",
                memory_total_bytes=int(p.totalGlobalMem),
                pci_bus_id=format_bus_id(p.pciDomainID, p.pciBusID, p.pciDeviceID),
                uuid=format_uuid(bytes(p.uuid.bytes)),
                sm_count=p.multiProcessorCount,
                warp_size=p.warpSize,
                max_threads_per_block=p.maxThreadsPerBlock,
                max_threads_per_sm=p.maxThreadsPerMultiProcessor,
                max_blocks_per_sm=p.maxBlocksPerMultiProcessor,
                registers_per_sm=p.regsPerMultiprocessor,
                shared_bytes_per_block=p.sharedMemPerBlock,
                shared_bytes_per_block_optin=p.sharedMemPerBlockOptin,
                shared_bytes_per_sm=p.sharedMemPerMultiprocessor,
                l2_bytes=p.l2CacheSize,
            )
        )
    return devices


def runtime_devices() -> tuple[list[RuntimeDevice], str]:
    """Every device the CUDA runtime sees, and which library asked it (CuPy first, then cuda.bindings)."""
    problems = []
    for source, reader in (("CuPy", _from_cupy), ("cuda.bindings.runtime", _from_cuda_bindings)):
        try:
            return reader(), source
        except ImportError as err:
            problems.append(f"{source} is not installed ({err.name})")
        except Exception as err:  # a driver too old for the library, no device, ...
            problems.append(f"{source}: {type(err).__name__}: {err}")
    raise RuntimeUnavailable(
        "The CUDA runtime could not be asked for device properties: "
        + "; ".join(problems)
        + ". Install CuPy for your CUDA version (pip install 'gpudojo[gpu]') to run this check."
    )


def _gib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:.2f} GiB ({n:,} bytes)"


def compare(nvml_gpus: list[GpuFacts], runtime: list[RuntimeDevice]) -> list[DeviceComparison]:
    """Match each CUDA device to the NVML GPU at its PCI address and compare what both report."""
    by_bus = {g.pci_bus_id.upper(): g for g in nvml_gpus if g.pci_bus_id}
    out = []
    for dev in runtime:
        gpu = by_bus.get(dev.pci_bus_id.upper())
        cmp = DeviceComparison(cuda_ordinal=dev.ordinal, nvml_index=gpu.index if gpu else None)
        out.append(cmp)
        if gpu is None:
            cmp.rows.append(
                FactRow("PCI bus id", "not found", dev.pci_bus_id, False, "no GPU NVML lists sits at this PCI address")
            )
            continue
        mig = gpu.mig.current == "enabled"
        cmp.rows.append(FactRow("PCI bus id", gpu.pci_bus_id or "n/a", dev.pci_bus_id, True))
        same_name = dev.name == gpu.name or (mig and dev.name.startswith(gpu.name))
        cmp.rows.append(FactRow("name", gpu.name, dev.name, same_name))
        cc = gpu.compute_capability
        cmp.rows.append(
            FactRow(
                "compute capability",
                cc or "n/a",
                dev.compute_capability,
                None if cc is None else cc == dev.compute_capability,
            )
        )
        total = gpu.memory_total_bytes
        if mig or total is None:
            agree, note = None, "MIG slice: the runtime sees one instance" if mig else "NVML did not say"
        else:
            gap = (total - dev.memory_total_bytes) / total
            agree = abs(gap) <= MEMORY_TOLERANCE
            note = (
                f"runtime {gap:.2%} below NVML: the driver's reserve" if gap >= 0 else f"runtime {-gap:.2%} above NVML"
            )
        cmp.rows.append(FactRow("memory", _gib(total), _gib(dev.memory_total_bytes), agree, note))
        if gpu.uuid and dev.uuid and not mig:
            cmp.rows.append(FactRow("UUID", gpu.uuid, dev.uuid, gpu.uuid.lower() == dev.uuid.lower()))
        if gpu.index != dev.ordinal:
            cmp.rows.append(
                FactRow(
                    "index",
                    str(gpu.index),
                    str(dev.ordinal),
                    None,
                    "numbered differently: CUDA puts the fastest GPU first unless "
                    "CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES renumbers",
                )
            )
    return out

"""Theoretical occupancy: how many warps of a kernel fit on one SM, and what stops more.

The rules are those of NVIDIA's occupancy calculator and of the CUDA runtime's
cudaOccupancyMaxActiveBlocksPerMultiprocessor, applied to the per-architecture limits in
archs.toml:

- warps: a block takes ceil(threads / 32) warp slots;
- blocks: at most max_blocks_per_sm resident blocks;
- registers: allocated per warp, ceil(registers * 32 / 256) * 256 each, from four equal
  sub-partitions of the register file (a warp's registers never straddle two);
- shared memory: static + dynamic + the per-block reserve, rounded up to 128 bytes,
  against the largest shared-memory carve-out of the SM.
"""

from __future__ import annotations

import math
import tomllib
from functools import cache
from pathlib import Path

from .models import ArchLimits, LimitedBy, Occupancy, OccupancyPoint

_ARCHS_FILE = Path(__file__).with_name("archs.toml")
# The register file is split among the SM's four schedulers (sub-partitions).
_REGISTER_PARTITIONS = 4
_ORDER: tuple[LimitedBy, ...] = ("warps", "blocks", "registers", "shared_memory")


@cache
def arch_table() -> dict[str, ArchLimits]:
    """Every architecture with known limits, by name (sm_80, ...), oldest first."""
    raw = tomllib.loads(_ARCHS_FILE.read_text(encoding="utf-8"))
    table = {name: ArchLimits(arch=name, **fields) for name, fields in raw.items()}
    return dict(sorted(table.items(), key=lambda kv: int(kv[0][3:].rstrip("af"))))


def limits_for(arch: str) -> ArchLimits:
    """The limits of ``arch``; ``sm_90a``-style variants use their base architecture's."""
    table = arch_table()
    base = arch.rstrip("af") if arch not in table else arch
    if base not in table:
        known = ", ".join(table)
        raise KeyError(f"no occupancy data for {arch}; known architectures: {known}")
    return table[base]


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(arch: str, registers: int, shared_bytes: int, block_size: int) -> Occupancy:
    """Occupancy of a kernel using ``registers`` per thread and ``shared_bytes`` (static +
    dynamic) per block, launched with ``block_size`` threads per block."""
    lim = limits_for(arch)
    registers = max(registers, 1)
    warps_per_block = math.ceil(block_size / lim.warp_size)
    smem = _round_up(shared_bytes + lim.reserved_shared_bytes_per_block, lim.shared_allocation_unit)

    by_warps = lim.max_warps_per_sm // warps_per_block
    by_blocks = lim.max_blocks_per_sm
    regs_per_warp = _round_up(registers * lim.warp_size, lim.register_allocation_unit)
    warps_per_partition = (lim.registers_per_sm // _REGISTER_PARTITIONS) // regs_per_warp
    by_registers = (warps_per_partition * _REGISTER_PARTITIONS) // warps_per_block
    by_shared = lim.shared_bytes_per_sm // smem if smem else by_blocks
    limits = {"warps": by_warps, "blocks": by_blocks, "registers": by_registers, "shared_memory": by_shared}

    error = None
    if block_size > lim.max_threads_per_block:
        error = f"{block_size} threads per block: the most is {lim.max_threads_per_block}"
    elif registers > lim.max_registers_per_thread:
        error = f"{registers} registers per thread: the most is {lim.max_registers_per_thread}"
    elif shared_bytes > lim.max_shared_bytes_per_block:
        error = f"{shared_bytes} bytes of shared memory per block: the most is {lim.max_shared_bytes_per_block}"
    elif by_registers == 0:
        error = f"{registers} registers x {block_size} threads do not fit in one SM's register file"

    blocks = 0 if error else min(limits.values())
    limited_by = min(_ORDER, key=lambda k: (limits[k], _ORDER.index(k)))
    active_warps = blocks * warps_per_block
    return Occupancy(
        block_size=block_size,
        registers_per_thread=registers,
        shared_bytes_per_block=smem,
        active_blocks_per_sm=blocks,
        active_warps_per_sm=active_warps,
        max_warps_per_sm=lim.max_warps_per_sm,
        occupancy=active_warps / lim.max_warps_per_sm,
        limited_by=limited_by,
        blocks_limit=limits,
        error=error,
    )


def occupancy_curve(arch: str, registers: int, shared_bytes: int) -> list[OccupancyPoint]:
    """Occupancy at every block size from 32 to 1024 in steps of a warp."""
    points = []
    for block_size in range(32, 1025, 32):
        occ = occupancy(arch, registers, shared_bytes, block_size)
        points.append(
            OccupancyPoint(
                block_size=block_size,
                active_warps_per_sm=occ.active_warps_per_sm,
                occupancy=occ.occupancy,
                limited_by=occ.limited_by,
            )
        )
    return points

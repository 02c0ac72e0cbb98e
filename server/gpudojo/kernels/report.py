"""Compile and run results as text (CLI, notebook repr) and HTML (notebook display)."""

from __future__ import annotations

from html import escape

from .models import CompileResult, KernelReport, MemoryReport, RunResult


def _kib(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def _occupancy_text(k: KernelReport) -> str:
    o = k.occupancy
    if o.error:
        return f"cannot launch at {o.block_size} threads: {o.error}"
    best = max(k.curve, key=lambda p: (p.occupancy, -p.block_size))
    return (
        f"{o.active_warps_per_sm}/{o.max_warps_per_sm} warps per SM ({o.occupancy:.0%}) at {o.block_size} threads, "
        f"limited by {o.limited_by.replace('_', ' ')}; best {best.occupancy:.0%} from {best.block_size} threads"
    )


def compile_text(r: CompileResult, sass: bool = False, ptx: bool = False) -> str:
    lines = [
        f"{r.compiler} -> {r.arch}: "
        + ("ok" if r.ok else "FAILED")
        + (" (cached)" if r.cached else "")
        + f", {r.timings.total_ms:.0f} ms"
    ]
    for d in r.diagnostics:
        where = f"line {d.line}" + (f":{d.column}" if d.column else "") if d.line else "-"
        lines.append(f"  {d.severity:<7} {where:<10} {d.message}")
    for k in r.kernels:
        lines.append(f"kernel {k.name}")
        lines.append(
            f"  registers {k.registers}, shared {_kib(k.shared_bytes)}, constant {_kib(k.constant_bytes)}, "
            f"stack {k.stack_bytes} B, spills {k.spill_stores_bytes}/{k.spill_loads_bytes} B (store/load), "
            f"barriers {k.barriers}"
        )
        lines.append(f"  occupancy: {_occupancy_text(k)}")
        if sass:
            lines.append(f"  SASS ({len(k.sass)} instructions):")
            lines += [
                f"    /*{i.offset:04x}*/ {i.text:<48} // line {i.line}"
                if i.line
                else f"    /*{i.offset:04x}*/ {i.text}"
                for i in k.sass
            ]
    if ptx and r.ptx:
        lines.append("PTX:")
        lines.append(r.ptx)
    if r.truncated:
        lines.append(f"cut at the server's size cap: {', '.join(r.truncated)}")
    return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}"


def memory_text(m: MemoryReport) -> list[str]:
    """The memory-access report as a compact per-line table (indented lines)."""
    lines = [f"  memory accesses per source line - {m.note}", f"    {m.sampling}"]
    if not m.lines:
        lines.append("    no global or shared accesses recorded")
        return lines
    lines.append(f"    {'line':>5}  {'kind':<6}  {'ops':<17} {'requests':>9}  per request")
    for row in m.lines:
        n = row.requests or 1
        if row.space == "global":
            per = f"{_num(row.sectors_per_request or 0)} sectors (min {_num(row.min_sectors_per_request or 0)})"
        else:
            ideal = (row.ideal_wavefronts or 0) / n
            ways = row.ways_per_request or 0
            if (row.wavefronts or 0) <= (row.ideal_wavefronts or 0):
                per = f"{_num(ways)}-way (no bank conflict)"
            else:
                per = (
                    f"{_num(ways)}-way bank conflict"
                    + (f" (worst {row.max_ways}-way)" if row.max_ways and row.max_ways != ways else "")
                    + f", ideal {_num(ideal)}-way"
                )
        where = str(row.line) if row.line else "-"
        lines.append(f"    {where:>5}  {row.space:<6}  {'/'.join(row.ops):<17} {row.requests:>9}  {per}")
    totals = []
    for t in m.totals:
        if t.space == "global":
            totals.append(
                f"global {t.requests} requests, {t.sectors} sectors (min {t.min_sectors}, {t.efficiency:.0%} efficient)"
            )
        else:
            totals.append(
                f"shared {t.requests} requests, {t.wavefronts} bank passes (ideal {t.ideal_wavefronts}, "
                f"{t.efficiency:.0%} efficient)"
            )
    lines.append("    kernel total: " + "; ".join(totals))
    for w in m.writers:
        each = "1 store each" if w.max_per_thread <= 1 else f"up to {w.max_per_thread} stores by one thread"
        lines.append(f"    {w.array} stored by {w.threads} thread{'s' if w.threads != 1 else ''}, {each}")
    return lines


def run_text(r: RunResult) -> str:
    head = {
        "gpu": f"GPU ({r.device or 'unknown device'})",
        "simulator": "numba CUDA simulator",
        "cpu-emulation": "CPU emulation",
        "none": "not run",
    }[r.mode]
    lines = [f"{r.status.upper()} - {head}", f"  {r.mode_note}"]
    if r.error:
        where = []
        if r.error.thread is not None:
            where.append(f"threadIdx={tuple(r.error.thread)} blockIdx={tuple(r.error.block or [])}")
        if r.error.line:
            where.append(f"line {r.error.line}")
        lines.append(f"  error ({r.error.kind}{', ' + ', '.join(where) if where else ''}): {r.error.message}")
    for c in r.checks:
        if not c.checked:
            lines.append(f"  {c.name}: not checked, first values {c.preview}")
        elif c.ok:
            lines.append(f"  {c.name}: matches the expected values (max abs error {c.max_abs_error:.3g})")
        else:
            fm = c.first_mismatch
            first = f", first at {fm.index}: got {fm.got:g}, expected {fm.expected:g}" if fm else ""
            lines.append(f"  {c.name}: {c.mismatches} wrong{first}")
    if r.timing:
        t = r.timing
        lines.append(f"  time: mean {t.mean_ms:.4f} ms, min {t.min_ms:.4f} ms over {t.repeats} ({t.method})")
    if r.emulator:
        e = r.emulator
        built = "cached binary" if e.cached else f"compiled in {e.compile_ms:.0f} ms"
        lines.append(f"  emulator: {e.compiler}, {built}")
    if r.memory:
        lines += memory_text(r.memory)
    if r.stdout:
        lines.append("  kernel output:\n" + "\n".join("    " + ln for ln in r.stdout.splitlines()[:50]))
    return "\n".join(lines)


_STYLE = "border-collapse:collapse;font-family:var(--jp-code-font-family,monospace);font-size:12px"


def compile_html(r: CompileResult) -> str:
    status = "ok" if r.ok else "failed"
    parts = [
        f"<div class='gpudojo-compile-report'><b>{escape(r.compiler)} &rarr; {escape(r.arch)}: {status}</b>"
        f"{' (cached)' if r.cached else ''}, {r.timings.total_ms:.0f} ms"
    ]
    if r.diagnostics:
        parts.append(
            "<ul>"
            + "".join(
                f"<li><b>{escape(d.severity)}</b> line {d.line or '-'}: {escape(d.message)}</li>" for d in r.diagnostics
            )
            + "</ul>"
        )
    if r.kernels:
        head = ["kernel", "registers", "shared", "constant", "stack", "spill st/ld", "barriers", "occupancy"]
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td style='padding:2px 8px'>{escape(str(c))}</td>"
                for c in (
                    k.name,
                    k.registers,
                    _kib(k.shared_bytes),
                    _kib(k.constant_bytes),
                    f"{k.stack_bytes} B",
                    f"{k.spill_stores_bytes}/{k.spill_loads_bytes} B",
                    k.barriers,
                    _occupancy_text(k),
                )
            )
            + "</tr>"
            for k in r.kernels
        )
        parts.append(
            f"<table style='{_STYLE}'><tr>"
            + "".join(f"<th style='padding:2px 8px'>{h}</th>" for h in head)
            + f"</tr>{rows}</table>"
        )
        for k in r.kernels:
            sass = "\n".join(f"/*{i.offset:04x}*/ {i.text}" + (f"  // line {i.line}" if i.line else "") for i in k.sass)
            parts.append(
                f"<details><summary>SASS of {escape(k.name)} ({len(k.sass)} instructions)</summary>"
                f"<pre>{escape(sass)}</pre></details>"
            )
    if r.ptx:
        parts.append(
            f"<details><summary>PTX ({r.ptx.count(chr(10))} lines)</summary><pre>{escape(r.ptx)}</pre></details>"
        )
    parts.append("</div>")
    return "".join(parts)


def run_html(r: RunResult) -> str:
    body = compile_html(r.compile) if r.compile else ""
    return f"<div class='gpudojo-run-report'><pre>{escape(run_text(r))}</pre>{body}</div>"

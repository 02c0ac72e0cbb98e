"""A memory capture's analysis, a diff of two and an estimate, as terminal text (``gpudojo
memory summary | diff | estimate``).

Plain functions of the API's Analysis, Diff and Estimate fields (dicts): nothing here reads a
snapshot.
"""

from __future__ import annotations

from typing import Any

from .estimator import _gib

TOP_FRAMES = 10
TOP_ROWS = 15


def _frame(frames: list[dict[str, Any]], index: int) -> str:
    if not 0 <= index < len(frames):
        return "(no user frame)"
    f = frames[index]
    return f"{f['filename']}:{f['line']} {f['name']}"


def _signed(n: int) -> str:
    return ("+" if n > 0 else "") + _gib(n)


def _breakdown_lines(b: dict[str, Any], frames: list[dict[str, Any]], indent: str = "  ") -> list[str]:
    total = b["total_bytes"] or 1
    lines = [f"{indent}by category:"]
    lines += [
        f"{indent}  {c['category']:<24} {_gib(c['bytes']):>12} {c['bytes'] / total:>6.1%}"
        for c in sorted(b["by_category"], key=lambda c: -c["bytes"])
    ]
    if b["by_frame"]:
        lines.append(f"{indent}top frames:")
        lines += [
            f"{indent}  {_gib(f['bytes']):>12} {f['count']:>7,} allocs  {_frame(frames, f['frame'])}"
            for f in b["by_frame"][:TOP_FRAMES]
        ]
    return lines


def render_text(analysis: dict[str, Any]) -> str:
    """The analysis as terminal text: what was captured, the peak with its categories and top
    frames, each OOM with its fixes, then the notes."""
    capture, peak, frames = analysis["capture"], analysis["peak"], analysis["frames"]
    span_ms = (analysis["t_end_us"] - analysis["t_start_us"]) / 1000
    lines = [
        f"{capture['label']} ({capture['kind']}) · {analysis['entries']:,} entries, "
        f"{analysis['allocations']:,} allocations over {span_ms:,.1f} ms · "
        f"analysed in {analysis['analysis_ms']:,.0f} ms",
        "",
        f"Peak: {_gib(peak['total_bytes'])} at {(peak['t_us'] - analysis['t_start_us']) / 1000:,.1f} ms",
        *_breakdown_lines(peak, frames),
    ]
    for oom in analysis["ooms"]:
        kind = "Simulated OOM (budget check)" if oom["simulated"] else "Out of memory"
        free = ""
        if oom.get("device_free_bytes") is not None and oom.get("device_total_bytes") is not None:
            free = f", {_gib(oom['device_free_bytes'])} free of {_gib(oom['device_total_bytes'])}"
        lines += [
            "",
            f"{kind}: asked for {_gib(oom['requested_bytes'])}{free}; live then {_gib(oom['live']['total_bytes'])}",
        ]
        lines += _breakdown_lines(oom["live"], frames)
        lines += [f"  fix: {f['action']} (saves {_gib(f['saving_bytes'])}): {f['detail']}" for f in oom["fixes"]]
    if not analysis["ooms"]:
        lines += ["", "No out-of-memory error in the capture."]
    if analysis["notes"]:
        lines += ["", "Notes:", *[f"  {n}" for n in analysis["notes"]]]
    return "\n".join(lines)


def render_diff_text(diff: dict[str, Any]) -> str:
    """Two captures' peaks side by side, by category and by frame, the biggest changes first."""
    lines = [
        f"Peak: {_gib(diff['peak_a_bytes'])} (A) -> {_gib(diff['peak_b_bytes'])} (B), {_signed(diff['delta_bytes'])}",
    ]
    for title, rows in (("by category", diff["by_category"]), ("by frame", diff["by_frame"])):
        if not rows:
            continue
        lines += ["", f"{title}:", f"  {'':<48} {'A':>12} {'B':>12} {'change':>12}"]
        for r in sorted(rows, key=lambda r: -abs(r["delta_bytes"]))[:TOP_ROWS]:
            key = r["key"] if len(r["key"]) <= 48 else r["key"][:47] + "…"
            lines.append(
                f"  {key:<48} {_gib(r['a_bytes']):>12} {_gib(r['b_bytes']):>12} {_signed(r['delta_bytes']):>12}"
            )
    return "\n".join(lines)


def render_estimate_text(est: dict[str, Any]) -> str:
    """The estimate by component with its formulas, and the gap to a measured peak."""
    lines = [f"  {t['component']:<18} {_gib(t['bytes']):>12}  {t['formula']}" for t in est["terms"]]
    lines.append(f"  {'total':<18} {_gib(est['total_bytes']):>12}")
    if est.get("measured_peak_bytes") is not None:
        lines.append(f"Measured peak {_gib(est['measured_peak_bytes'])}, gap {_signed(est['gap_bytes'] or 0)}")
        lines += [f"  {g}" for g in est["gap_explained"]]
    return "\n".join(["Estimated training memory:", *lines])


def render_transformer_text(est: dict[str, Any]) -> str:
    """A transformer's estimate: the terms per GPU with formulas, then parameters, FLOPs and notes."""
    lines = [f"  {t['component']:<18} {_gib(t['bytes']):>12}  {t['formula']}" for t in est["terms"]]
    lines.append(f"  {'total':<18} {_gib(est['total_bytes']):>12}")
    lines += [
        f"Parameters: {est['parameter_count']:,} in all, {est['parameters_per_gpu']:,} on this GPU",
        f"Training FLOPs per token (6N + 12Lsh): {est['flops_per_token']:,}",
        f"Activations per layer on this GPU: {_gib(est['activation_bytes_per_layer'])}",
        *[f"  {n}" for n in est["notes"]],
    ]
    return "\n".join(["Estimated training memory per GPU:", *lines])

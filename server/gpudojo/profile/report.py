"""A profile's summary and a comparison of two, as text (``gpudojo profile summary`` and
``gpudojo profile diff``) and as self-contained HTML for a notebook cell (inline styles, no
scripts; JupyterLab's theme variables where there are any, plain colours elsewhere).

Plain functions of the summary and diff dicts (the API's ProfileSummary and ProfileDiff
fields): nothing here reads a trace.
"""

from __future__ import annotations

from html import escape
from typing import Any

CATEGORY_LABELS = {
    "compute": "compute",
    "communication": "communication",
    "data_loading": "data loading",
    "memcpy": "memcpy",
    "sync": "sync",
    "idle": "idle",
}
CATEGORY_COLOURS = {
    "compute": "#4c78a8",
    "communication": "#9467bd",
    "data_loading": "#f58518",
    "memcpy": "#72b7b2",
    "sync": "#e45756",
    "idle": "#bab0ac",
}
TEXT_OPS = 15
HTML_OPS = 10
BAR_WIDTH = 30


def _ms(us: float) -> str:
    return f"{us / 1000:,.2f} ms" if us < 10_000 else f"{us / 1000:,.1f} ms"


def _steps(summary: dict[str, Any]) -> int:
    return max(len(summary.get("steps") or []), 1)


def _mode_line(summary: dict[str, Any]) -> str:
    ranks = summary["ranks"]
    rank_text = f"{len(ranks)} ranks" if len(ranks) > 1 else f"rank {ranks[0]}" if ranks else "no rank"
    return (
        f"{summary['mode']['label']} · {rank_text} · {summary['events']:,} events · "
        f"analysed in {summary['analysis_ms']:,.0f} ms"
    )


def _bar(share: float) -> str:
    filled = round(max(0.0, min(share, 1.0)) * BAR_WIDTH)
    return "█" * filled + "·" * (BAR_WIDTH - filled)


def render_text(summary: dict[str, Any]) -> str:
    """The summary as terminal text: mode, steps, breakdown, findings, top operators, then
    kernels, syncs, overlap and notes where the trace has them."""
    lines = [_mode_line(summary)]
    cannot = summary["mode"].get("cannot_show") or []
    if cannot:
        lines.append("  cannot show: " + "; ".join(cannot))
    step_us = summary["mean_step_us"] or 0.0
    n = _steps(summary)
    source = "ProfilerStep spans" if summary["step_source"] == "profiler-steps" else "the whole trace as one step"
    lines += ["", f"Steps ({source}): {n}, mean {_ms(step_us)}"]
    for step in (summary.get("steps") or [])[:20]:
        parts = [
            f"{CATEGORY_LABELS[c['category']]} {c['us'] / step['dur_us']:.0%}"
            for c in step["breakdown"]
            if step["dur_us"] > 0 and c["us"] / step["dur_us"] >= 0.005
        ]
        lines.append(f"  #{step['step']:<6} {_ms(step['dur_us']):>12}   " + " · ".join(parts))
    lines += ["", f"Where the mean step goes ({_ms(step_us)}):"]
    for c in summary["breakdown"]:
        share = c["us"] / step_us if step_us else 0.0
        lines.append(f"  {CATEGORY_LABELS[c['category']]:<14} {_ms(c['us']):>12} {share:>6.1%}  {_bar(share)}")
    lines += ["", "Findings:" if summary["findings"] else "Findings: none above the thresholds."]
    for f in summary["findings"]:
        lines += [f"  [{f['severity']}] {f['title']}", f"      {f['evidence']}", f"      -> {f['suggestion']}"]
    lines += ["", "Top operators (per step; CPU self / total, device time of their kernels):"]
    lines.append(f"  {'operator':<44} {'calls':>7} {'self':>12} {'total':>12} {'device':>12}  input shapes")
    for op in summary["top_ops"][:TEXT_OPS]:
        lines.append(
            f"  {_cut(op['name'], 44):<44} {op['calls'] / n:>7.4g} {_ms(op['self_us'] / n):>12} "
            f"{_ms(op['total_us'] / n):>12} {_ms(op['device_total_us'] / n):>12}  {', '.join(op['input_shapes'][:2])}"
        )
    lines += _kernel_lines(summary, n) + _sync_lines(summary) + _overlap_lines(summary)
    if summary.get("hta"):
        lines += ["", "Holistic Trace Analysis used for: " + ", ".join(summary["hta"])]
    if summary.get("notes"):
        lines += ["", "Notes:"] + [f"  - {note}" for note in summary["notes"]]
    return "\n".join(lines) + "\n"


def _kernel_lines(summary: dict[str, Any], n: int) -> list[str]:
    if not summary.get("kernels"):
        return []
    lines = ["", "GPU kernels (per step):", f"  {'kernel':<60} {'calls':>7} {'total':>12} {'mean':>10} {'share':>6}"]
    for k in summary["kernels"][:TEXT_OPS]:
        lines.append(
            f"  {_cut(k['name'], 60):<60} {k['calls'] / n:>7.4g} {_ms(k['total_us'] / n):>12} "
            f"{k['mean_us']:>8.1f}us {k['share']:>6.1%}"
        )
    launch = summary.get("launch")
    if launch:
        delay = launch.get("median_launch_delay_us")
        gap = launch.get("median_gap_us")
        lines.append(
            f"  launches: {launch['kernels_per_step']:,.0f} kernels per step, {launch['short_kernels_per_step']:,.0f} "
            f"under 10 us; median launch delay {'-' if delay is None else f'{delay:.1f} us'}, median gap "
            f"{'-' if gap is None else f'{gap:.1f} us'} ({launch['source']})"
        )
    return lines


def _sync_lines(summary: dict[str, Any]) -> list[str]:
    if not summary.get("syncs"):
        return []
    lines = ["", "Host syncs:"]
    for s in summary["syncs"]:
        lines.append(f"  {s['per_step']:g} per step  {s['op']:<28} at {s['location'] or '(no stack recorded)'}")
    return lines


def _overlap_lines(summary: dict[str, Any]) -> list[str]:
    if not summary.get("overlap"):
        return []
    lines = ["", "Communication overlapped by computation:"]
    for o in summary["overlap"]:
        lines.append(
            f"  rank {o['rank']}: {_ms(o['communication_us'])} of communication, {o['share']:.0%} overlapped "
            f"({o['source']})"
        )
    return lines


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_diff_text(diff: dict[str, Any]) -> str:
    """Two profiles side by side: step time and speedup, breakdown, operators, findings."""
    a, b = diff.get("a", "a"), diff.get("b", "b")
    speed = diff["speedup"]
    verdict = f"{speed:.2f}x faster" if speed >= 1 else f"{1 / speed:.2f}x slower" if speed > 0 else "no steps"
    lines = [
        f"a: {a} ({diff['a_mode']})",
        f"b: {b} ({diff['b_mode']})",
        f"Step time: {_ms(diff['step_a_us'])} -> {_ms(diff['step_b_us'])} ({verdict})",
    ]
    if diff["a_mode"] != diff["b_mode"]:
        lines.append("  (one is a GPU trace and the other a CPU trace: the breakdowns measure different timelines)")
    lines += ["", f"  {'per step':<16} {'a':>12} {'b':>12} {'change':>12}"]
    for row in diff["breakdown"]:
        lines.append(
            f"  {CATEGORY_LABELS.get(row['key'], row['key']):<16} {_ms(row['a_us']):>12} {_ms(row['b_us']):>12} "
            f"{_signed_ms(row['delta_us']):>12}"
        )
    lines += ["", f"  {'operator (self time per step)':<44} {'a':>12} {'b':>12} {'change':>12}  calls a/b (all steps)"]
    for op in diff["ops"][:TEXT_OPS]:
        lines.append(
            f"  {_cut(op['name'], 44):<44} {_ms(op['a_self_us']):>12} {_ms(op['b_self_us']):>12} "
            f"{_signed_ms(op['delta_us']):>12}  {op['a_calls']}/{op['b_calls']}"
        )
    lines += [
        "",
        "Findings resolved: " + (", ".join(diff["findings_resolved"]) or "none"),
        "Findings new: " + (", ".join(diff["findings_new"]) or "none"),
    ]
    return "\n".join(lines) + "\n"


def _signed_ms(us: float) -> str:
    return ("+" if us > 0 else "-" if us < 0 else "") + _ms(abs(us))


# ---------------------------------------------------------------- HTML

_FG = "var(--jp-ui-font-color1, #222)"
_FG2 = "var(--jp-ui-font-color2, #666)"
_BORDER = "var(--jp-border-color2, #ddd)"
_SEVERITY_COLOURS = {"high": "#d62728", "medium": "#ff7f0e", "info": "#1f77b4"}


def render_html(summary: dict[str, Any]) -> str:
    """The summary as one HTML fragment for a notebook cell: mode, the mean step's breakdown
    as a stacked bar, findings, top operators."""
    step_us = summary["mean_step_us"] or 0.0
    n = _steps(summary)
    parts = [f'<div style="font-family: var(--jp-ui-font-family, sans-serif); color: {_FG}; max-width: 60em">']
    parts.append(f'<div style="font-weight: 600">{escape(_mode_line(summary))}</div>')
    cannot = summary["mode"].get("cannot_show") or []
    if cannot:
        parts.append(f'<div style="color: {_FG2}; font-size: 90%">Cannot show: {escape("; ".join(cannot))}</div>')
    parts.append(
        f'<div style="margin-top: 0.6em">Mean step {escape(_ms(step_us))} over {n} step{"s" if n != 1 else ""}</div>'
    )
    parts.append(_html_bar(summary["breakdown"], step_us))
    parts.append(_html_findings(summary["findings"]))
    parts.append(_html_ops(summary["top_ops"][:HTML_OPS], n))
    if summary.get("notes"):
        notes = "".join(f"<li>{escape(note)}</li>" for note in summary["notes"])
        parts.append(f'<ul style="color: {_FG2}; font-size: 90%">{notes}</ul>')
    parts.append("</div>")
    return "".join(parts)


def _html_bar(breakdown: list[dict[str, Any]], step_us: float) -> str:
    segments, legend = [], []
    for c in breakdown:
        share = c["us"] / step_us if step_us else 0.0
        label = CATEGORY_LABELS[c["category"]]
        colour = CATEGORY_COLOURS[c["category"]]
        title = escape(f"{label}: {_ms(c['us'])} ({share:.1%})")
        if share > 0:
            segments.append(f'<div title="{title}" style="width: {share * 100:.3f}%; background: {colour}"></div>')
        legend.append(
            f'<span style="margin-right: 1em"><span style="display: inline-block; width: 0.8em; height: 0.8em; '
            f'background: {colour}"></span> {escape(label)} {share:.0%}</span>'
        )
    bar = f'<div style="display: flex; height: 1.2em; border: 1px solid {_BORDER}">{"".join(segments)}</div>'
    return bar + f'<div style="font-size: 90%; margin: 0.3em 0 0.8em">{"".join(legend)}</div>'


def _html_findings(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return "<div>No findings above the thresholds.</div>"
    items = []
    for f in findings:
        colour = _SEVERITY_COLOURS.get(f["severity"], "#888")
        items.append(
            f'<li style="margin-bottom: 0.4em"><span style="color: {colour}; font-weight: 600">'
            f"{escape(f['severity'])}</span> <b>{escape(f['title'])}</b><br>"
            f'<span style="color: {_FG2}">{escape(f["evidence"])}</span><br>&rarr; {escape(f["suggestion"])}</li>'
        )
    return f'<ul style="padding-left: 1.2em">{"".join(items)}</ul>'


def _html_ops(ops: list[dict[str, Any]], n: int) -> str:
    cell = f'style="padding: 2px 8px; border-bottom: 1px solid {_BORDER}; text-align: right"'
    left = f'style="padding: 2px 8px; border-bottom: 1px solid {_BORDER}; text-align: left"'
    head = "".join(
        f"<th {left if h == 'operator' else cell}>{h}</th>"
        for h in ("operator", "calls / step", "self / step", "total / step", "device / step")
    )
    rows = []
    for op in ops:
        shapes = escape(", ".join(op["input_shapes"]))
        times = "".join(f"<td {cell}>{escape(_ms(op[k] / n))}</td>" for k in ("self_us", "total_us", "device_total_us"))
        rows.append(
            f'<tr><td {left} title="{shapes}">{escape(_cut(op["name"], 60))}</td>'
            f"<td {cell}>{op['calls'] / n:.4g}</td>{times}</tr>"
        )
    body = "".join(rows)
    return f'<table style="border-collapse: collapse; font-size: 90%"><tr>{head}</tr>{body}</table>'

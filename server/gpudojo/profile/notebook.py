"""Profiles from a notebook: the same analysis and summary as the profile view, rendered in
a cell.

    from gpudojo.profile.notebook import summary, diff
    summary("gpudojo-profiles/rank0.trace.json")        # steps, breakdown, findings, top ops
    diff("before/rank0.trace.json", "after/rank0.trace.json")

Both go through the same ProfileService as the server (an analysis worker of their own, the
same cache folder under gpudojo's data dir), so a trace analysed here opens at once in the
view and the other way round.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from .models import ProfileDiff, ProfileSummary
from .report import render_diff_text, render_html, render_text
from .service import ProfileService, trace_id_for


@cache
def service() -> ProfileService:
    """This process's profile service; files are named by their own path (its root is /)."""
    from ..services import Settings

    return ProfileService(Settings().data_path, Path("/"))


class SummaryReport:
    """A profile summary that renders itself in a notebook (HTML) or a terminal (text)."""

    def __init__(self, result: ProfileSummary) -> None:
        self.result = result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)

    def __repr__(self) -> str:
        return render_text(self.result.model_dump())

    def _repr_html_(self) -> str:
        return render_html(self.result.model_dump())


class DiffReport:
    def __init__(self, result: ProfileDiff) -> None:
        self.result = result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)

    def __repr__(self) -> str:
        return render_diff_text(self.result.model_dump())

    def _repr_html_(self) -> str:
        from html import escape

        return f"<pre>{escape(repr(self))}</pre>"


def summary(trace: str | Path) -> SummaryReport:
    """Analyse a trace file (or a run's trace id, run:<run>:rank0.trace.json) and show its
    summary: mode, steps and their breakdown, findings with evidence, top operators."""
    return SummaryReport(service().summary(trace_id_for(trace)))


def diff(before: str | Path, after: str | Path) -> DiffReport:
    """Compare two traces: step time, breakdown and operators, biggest changes first."""
    return DiffReport(service().diff(trace_id_for(before), trace_id_for(after)))

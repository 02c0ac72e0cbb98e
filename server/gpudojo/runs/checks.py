"""A lab's checks, decided from what its ranks reported and how the run ended."""

from __future__ import annotations

from typing import Any

from .models import CheckResult, CheckSpec, ParamValue


def _series(metrics: dict[int, list[dict[str, Any]]], rank: int, name: str) -> list[float]:
    return [float(m[name]) for m in metrics.get(rank, []) if isinstance(m.get(name), int | float)]


def evaluate(
    specs: list[CheckSpec],
    params: dict[str, ParamValue],
    metrics: dict[int, list[dict[str, Any]]],
    reported: dict[str, dict[str, Any]],
    *,
    has_gpu: bool,
    gpus: int,
    finished: bool,
    succeeded: bool,
) -> list[CheckResult]:
    """One result per check; ok is None while undecided (run still going) or not applicable."""
    out = []
    for spec in specs:
        applies = all(params.get(k) == v for k, v in spec.when.items())
        if spec.needs == "gpu" and not has_gpu:
            applies = False
        if spec.needs == "multi-gpu" and gpus < 2:
            applies = False
        result = CheckResult(id=spec.id, title=spec.title, ok=None, applies=applies)
        if not applies:
            result.detail = "does not apply to this run" if spec.when else f"needs {spec.needs}"
            out.append(result)
            continue
        if spec.kind == "reported":
            got = reported.get(spec.id)
            if got is not None and got.get("ok") is not None:
                result.ok, result.detail = bool(got["ok"]), str(got.get("detail", ""))
            elif got is not None:
                result.applies, result.detail = False, str(got.get("detail", "") or "the script says it does not apply")
            elif finished:
                result.ok, result.detail = False, "the script did not report it"
        elif spec.kind == "succeeded":
            if finished:
                result.ok = succeeded
                result.detail = "every process exited with 0" if succeeded else "the run did not succeed"
        elif spec.kind == "decreases" and spec.metric:
            values = _series(metrics, 0, spec.metric)
            if len(values) >= 2:
                result.ok = values[-1] < values[0]
                result.detail = f"{spec.metric}: {values[0]:.4g} at the first step, {values[-1]:.4g} at the last"
            if finished and len(values) < 2:
                result.ok, result.detail = False, f"rank 0 reported {spec.metric} fewer than twice"
        elif spec.kind == "ranks_equal" and spec.metric:
            last = {rank: s[-1] for rank in metrics if (s := _series(metrics, rank, spec.metric))}
            if finished or len(last) == int(params.get("nproc", 1) or 1):
                if not last:
                    result.ok = False if finished else None
                    result.detail = f"no rank reported {spec.metric}"
                else:
                    spread = max(last.values()) - min(last.values())
                    scale = max(abs(v) for v in last.values()) or 1.0
                    result.ok = spread <= 1e-6 * scale
                    values = ", ".join(f"rank {r}: {v:.9g}" for r, v in sorted(last.items()))
                    result.detail = f"{spec.metric}: {values}"
        out.append(result)
    return out

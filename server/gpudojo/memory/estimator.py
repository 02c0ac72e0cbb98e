"""What training a model takes in memory, component by component, with the formulas.

Bytes per parameter (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", 2020, section 3.1): fp32 training with Adam keeps the weights
(4), gradients (4) and two moments (4 + 4) = 16 bytes; standard mixed precision keeps
fp16/bf16 weights (2) and gradients (2) and, in the optimizer, fp32 master weights (4) and
moments (4 + 4) = 16 bytes too. ZeRO stage 1 splits the optimizer states over the
data-parallel ranks, stage 2 also the gradients, stage 3 also the weights. Activations
scale with the micro-batch; gradient checkpointing keeps about 1/sqrt(layers) of them
(Chen et al., "Training Deep Nets with Sublinear Memory Cost", 2016).
"""

from __future__ import annotations

import math

from .models import Estimate, EstimateRequest, EstimateTerm

_MOMENTS = {"sgd": 0, "sgd-momentum": 1, "adam": 2, "adamw": 2}


def _gib(n: float) -> str:
    """Bytes in the largest binary unit that keeps a digit before the point."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def estimate(req: EstimateRequest) -> Estimate:
    p, dp = req.parameters, req.data_parallel
    mixed = req.precision.startswith("mixed")
    weight_bytes = 4 if req.precision == "fp32" else 2
    grad_bytes = weight_bytes
    moments = _MOMENTS[req.optimizer]
    state_bytes = 4 * moments  # fp32 moments
    split_states = dp if req.zero_stage >= 1 else 1
    split_grads = dp if req.zero_stage >= 2 else 1
    split_weights = dp if req.zero_stage >= 3 else 1

    terms = [
        EstimateTerm(
            component="parameters",
            bytes=p * weight_bytes // split_weights,
            formula=f"{p:,} params x {weight_bytes} B" + (f" / {dp} ranks (ZeRO-3)" if split_weights > 1 else ""),
        ),
        EstimateTerm(
            component="gradients",
            bytes=p * grad_bytes // split_grads,
            formula=f"{p:,} params x {grad_bytes} B" + (f" / {dp} ranks (ZeRO-2)" if split_grads > 1 else ""),
        ),
        EstimateTerm(
            component="optimizer_states",
            bytes=p * state_bytes // split_states,
            formula=f"{p:,} params x {moments} fp32 moment(s) x 4 B ({req.optimizer})"
            + (f" / {dp} ranks (ZeRO-1)" if split_states > 1 else ""),
        ),
    ]
    if mixed:
        terms.append(
            EstimateTerm(
                component="master_weights",
                bytes=p * 4 // split_states,
                formula=f"{p:,} params x 4 B fp32 master copy" + (f" / {dp} ranks" if split_states > 1 else ""),
            )
        )
    activations = req.activation_bytes_per_sample * req.micro_batch
    formula = f"{req.activation_bytes_per_sample:,} B per sample (fp32) x micro-batch {req.micro_batch}"
    if req.precision != "fp32":
        # Autocast keeps what backward needs in 16 bits (the activations are measured in fp32).
        activations //= 2
        formula += " x 1/2 (16-bit activations)"
    if req.checkpointing:
        keep = 1 / math.sqrt(req.layers)
        activations = int(activations * keep)
        formula += f" x 1/sqrt({req.layers} layers) (checkpointing)"
    terms.append(EstimateTerm(component="activations", bytes=activations, formula=formula))
    total = sum(t.bytes for t in terms)
    out = Estimate(terms=terms, total_bytes=total)
    if req.measured_peak_bytes is not None:
        out.measured_peak_bytes = req.measured_peak_bytes
        out.gap_bytes = req.measured_peak_bytes - total
        out.gap_explained = _gap_words(out.gap_bytes, total)
    return out


def _gap_words(gap: int, total: int) -> list[str]:
    if gap >= 0:
        return [
            f"The run peaked {_gib(gap)} above the estimate. What the formula leaves out: temporaries "
            "(e.g. a loss's intermediate tensors, the optimizer's scratch during step), the caching allocator "
            "rounding blocks up and keeping freed blocks in reserve (fragmentation), library workspaces "
            "(cuBLAS, cuDNN), and on a GPU the CUDA context itself (hundreds of MiB, outside PyTorch's count).",
        ]
    return [
        f"The run peaked {_gib(-gap)} below the estimate: some terms were not all live at once (gradients "
        "freed as soon as the optimizer used them, activations freed layer by layer during backward), or the "
        "activation figure per sample is too high.",
    ]


def oom_fixes(context: dict, requested: int, shortfall: int) -> list[dict]:
    """Ways out of an OOM, each with the saving the estimator gives, cheapest to apply first.

    ``context`` is what labkit recorded about the model (parameters, optimizer, precision,
    micro_batch, activation_bytes_per_sample, layers, checkpointing, zero_stage,
    data_parallel); without a parameter count there is nothing to estimate from."""
    if not context.get("parameters"):
        return []
    fields = set(EstimateRequest.model_fields)
    base = EstimateRequest(**{k: v for k, v in context.items() if k in fields})
    now = estimate(base).total_bytes
    options: list[tuple[str, EstimateRequest, str]] = []
    if base.micro_batch > 1:
        half = max(base.micro_batch // 2, 1)
        options.append(
            (
                "halve the micro-batch",
                base.model_copy(update={"micro_batch": half}),
                f"micro-batch {base.micro_batch} -> {half}; keep the global batch with gradient accumulation",
            )
        )
    if not base.checkpointing and base.layers > 1:
        options.append(
            (
                "gradient checkpointing",
                base.model_copy(update={"checkpointing": True}),
                "recompute activations in backward instead of keeping them (about 30% more compute)",
            )
        )
    if base.precision == "fp32":
        options.append(
            (
                "mixed precision (bf16 autocast)",
                base.model_copy(update={"precision": "mixed-bf16"}),
                "16-bit activations and gradients; fp32 master weights kept",
            )
        )
    if base.optimizer in ("adam", "adamw"):
        options.append(
            (
                "an optimizer with less state (SGD with momentum)",
                base.model_copy(update={"optimizer": "sgd-momentum"}),
                "one moment per parameter instead of two; may need retuning",
            )
        )
    if base.data_parallel > 1 and base.zero_stage < 3:
        stage = base.zero_stage + 1
        options.append(
            (
                f"ZeRO stage {stage}",
                base.model_copy(update={"zero_stage": stage}),
                f"shard {'optimizer states' if stage == 1 else 'gradients' if stage == 2 else 'weights'} "
                f"over {base.data_parallel} ranks",
            )
        )
    fixes = []
    for action, changed, detail in options:
        saving = now - estimate(changed).total_bytes
        if saving > 0:
            enough = " (enough for this allocation)" if saving >= shortfall else ""
            fixes.append({"action": action, "saving_bytes": saving, "detail": detail + enough})
    # The order a learner should try them: what is cheapest to change first.
    return fixes

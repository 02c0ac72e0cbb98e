"""A GPT-style transformer's training memory per GPU, from its shape and parallel layout.

Activations per layer follow Korthikanti et al., "Reducing Activation Recomputation in
Large Transformer Models" (2022), section 4: with 16-bit activations and 1-byte dropout
masks a layer keeps sbh(34 + 5as/h) bytes for backward (s sequence, b micro-batch, h
hidden, a heads). Counted in elements, that is 16 sbh values (layer-norm inputs 2, the
attention's input, Q, K, V and output projection input 5, the MLP's input, GeLU input and
second linear input 9), 2 as^2 b values (softmax output and its dropout), and the masks
(2 sbh + as^2 b bytes); so any element size e gives sbh(16e + 2) + as^2 b(2e + 1). Tensor
parallelism over t ranks splits all but the layer-norm and linear inputs (4 sbh values and
the 2 sbh bytes of masks), sequence parallelism splits those too; selective recomputation
and fused (Flash) attention drop the as^2 b term; full recomputation keeps each layer's
input only. Under 1F1B the first pipeline stage holds p micro-batches of L/p layers: L
layers' worth whatever p (same paper, section 4.2.3).

Parameters: 12h^2 + 13h per layer (QKV, output projection, two MLP linears, their biases,
two layer norms), Vh for the embedding tied to the output layer, sh for learned positions.
Training FLOPs per token: 6N for the matrix multiplies (forward 2N, backward 4N: Kaplan et
al. 2020, "Scaling Laws for Neural Language Models"; Hoffmann et al. 2022, "Chinchilla")
plus 12 L s h for attention's QK^T and AV, which no parameter accounts for (Chowdhery et
al. 2022, "PaLM", appendix B).
"""

from __future__ import annotations

from .estimator import estimate
from .models import EstimateRequest, EstimateTerm, TransformerEstimate, TransformerEstimateRequest


def parameter_count(req: TransformerEstimateRequest) -> int:
    """The whole model's parameters: L(12h^2 + 13h) + Vh (+ sh) + 2h for the final layer norm."""
    h = req.hidden
    positions = req.sequence * h if req.learned_positions else 0
    return req.layers * (12 * h * h + 13 * h) + req.vocab * h + positions + 2 * h


def activation_element_bytes(precision: str) -> int:
    """Bytes per saved activation value: 4 in fp32, 2 under autocast or pure 16-bit."""
    return 4 if precision == "fp32" else 2


def layer_activation_bytes(
    s: int,
    b: int,
    h: int,
    a: int,
    *,
    element_bytes: int = 2,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    dropout: bool = True,
    attention_scores: bool = True,
) -> int:
    """Bytes one transformer layer keeps for backward on one GPU (no recomputation)."""
    t, e, mask = tensor_parallel, element_bytes, 1 if dropout else 0
    replicated = (4 * e + 2 * mask) * s * b * h  # layer-norm and linear inputs, two dropout masks
    split = 12 * e * s * b * h  # Q, K, V, projection input, GeLU input, second linear input
    scores = (2 * e + mask) * a * s * s * b if attention_scores else 0
    if sequence_parallel:
        return (replicated + split + scores) // t
    return replicated + split // t + scores // t


def _layer_formula(e: int, dropout: bool, t: int, sp: bool, scores: bool) -> str:
    """The per-layer formula with this precision's coefficients, e.g. sbh(34 + 5as/h)."""
    m = 1 if dropout else 0
    r, split, c = 4 * e + 2 * m, 12 * e, 2 * e + m
    if t == 1 or sp:
        body = f"{r + split}" + (f" + {c}as/h" if scores else "")
        return f"sbh({body})" + (f"/{t}" if t > 1 else "")
    return f"sbh({r} + {split}/{t}" + (f" + {c}as/(h*{t})" if scores else "") + ")"


def flops_per_token(req: TransformerEstimateRequest) -> int:
    """Training FLOPs per token: 6N + 12 L s h (forward and backward)."""
    return 6 * parameter_count(req) + 12 * req.layers * req.sequence * req.hidden


def estimate_transformer(req: TransformerEstimateRequest) -> TransformerEstimate:
    """Memory per GPU (bytes) of the first pipeline stage, by component, with the formulas."""
    s, b, h, a, L, V = req.sequence, req.micro_batch, req.hidden, req.heads, req.layers, req.vocab
    t, p, dp = req.tensor_parallel, req.pipeline_parallel, req.data_parallel
    n = parameter_count(req)
    # The first stage: L/p layers split t ways, the (vocab-parallel) embedding and positions.
    positions = s * h if req.learned_positions else 0
    per_gpu = (L // p) * (12 * h * h + 13 * h) // t + V * h // t + positions + (2 * h if p == 1 else 0)
    state = estimate(
        EstimateRequest(
            parameters=max(per_gpu, 1),
            optimizer=req.optimizer,
            precision=req.precision,
            zero_stage=req.zero_stage,
            data_parallel=dp,
        )
    )
    terms = [term for term in state.terms if term.component != "activations"]

    e = activation_element_bytes(req.precision)
    keep_scores = not (req.flash_attention or req.recompute == "selective")
    full = layer_activation_bytes(
        s,
        b,
        h,
        a,
        element_bytes=e,
        tensor_parallel=t,
        sequence_parallel=req.sequence_parallel,
        dropout=req.dropout,
        attention_scores=keep_scores,
    )
    split = t if req.sequence_parallel else 1
    shape = f"s={s} b={b} h={h} a={a}"
    if req.recompute == "full":
        per_layer = e * s * b * h // split
        layers_bytes = L * per_layer + full
        inputs = f"{e}sbh" + (f"/{t}" if split > 1 else "")
        one = _layer_formula(e, req.dropout, t, req.sequence_parallel, keep_scores)
        formula = f"{L} layers x {inputs} (layer inputs only) + one layer's {one} while backward recomputes it"
    else:
        per_layer = full
        layers_bytes = L * per_layer
        base = _layer_formula(e, req.dropout, t, req.sequence_parallel, keep_scores)
        why = "FlashAttention" if req.flash_attention else "selective recompute"
        formula = f"{L} layers x {base}" + ("" if keep_scores else f" (no scores stored: {why})")
    if p > 1:
        formula += f"; 1F1B: the first of {p} stages holds {p} micro-batches of {L // p} layers"
    # The output layer sits on the last stage: with one stage it adds its inputs (final layer
    # norm, projection) and the fp32 log-probabilities the loss keeps (vocab-parallel over t).
    output = 0
    if p == 1:
        output = 2 * e * s * b * h // split + 4 * s * b * V // t
        formula += f" + output layer {2 * e}sbh + 4sbV{f'/{t}' if t > 1 else ''} (fp32 log-probs)"
    formula += f"; {shape}"
    terms.append(EstimateTerm(component="activations", bytes=layers_bytes + output, formula=formula))

    notes = [
        "Per GPU of the first pipeline stage; the last stage holds the output layer's activations instead of "
        "p micro-batches of the first layers.",
        "Activations as Korthikanti et al. (2022) count them; temporaries (attention's softmax in backward, "
        "the optimizer's scratch), allocator rounding and the CUDA context come on top.",
    ]
    if t > 1:
        notes.append(
            "Layer norms and row-parallel biases are replicated over TP ranks; dividing them by t is off by a few h."
        )
    if req.flash_attention:
        notes.append("FlashAttention keeps a log-sum-exp per row (4 a s b bytes), left out here.")
    return TransformerEstimate(
        terms=terms,
        total_bytes=sum(term.bytes for term in terms),
        parameter_count=n,
        parameters_per_gpu=per_gpu,
        activation_bytes_per_layer=per_layer,
        flops_per_token=flops_per_token(req),
        notes=notes,
    )

"""The estimator's transformer mode: parameters, activations per layer under each parallel
layout and recomputation, FLOPs per token; checked by hand and against Korthikanti et al.
(2022), "Reducing Activation Recomputation in Large Transformer Models"."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from tornado.httpclient import HTTPClientError

from gpudojo.memory.models import TransformerEstimateRequest
from gpudojo.memory.transformer import estimate_transformer, layer_activation_bytes, parameter_count

# The shapes of the paper's GPT-3 175B and MT-NLG 530B runs (sequence 2048; the tests set tensor parallel 8).
GPT3_175B = dict(layers=96, hidden=12288, heads=96, sequence=2048, vocab=51200, learned_positions=True)
MT_NLG_530B = dict(layers=105, hidden=20480, heads=128, sequence=2048, vocab=51200, learned_positions=True)


def _terms(req: TransformerEstimateRequest) -> dict[str, int]:
    return {t.component: t.bytes for t in estimate_transformer(req).terms}


def test_a_small_fp32_gpt_by_hand():
    # L=2, h=64, a=4, s=32, b=2, V=100: sbh = 4096, as^2b = 8192.
    req = TransformerEstimateRequest(
        layers=2, hidden=64, heads=4, sequence=32, micro_batch=2, vocab=100, precision="fp32"
    )
    est = estimate_transformer(req)
    # 2(12*64^2 + 13*64) + 100*64 + 2*64 (final layer norm)
    assert est.parameter_count == 106_496 == est.parameters_per_gpu
    # fp32: 4-byte values, 1-byte masks: sbh(16*4 + 2) + as^2b(2*4 + 1)
    assert est.activation_bytes_per_layer == 4096 * 66 + 8192 * 9 == 344_064
    terms = _terms(req)
    # two layers + the output layer's inputs (2 x 4 sbh) + fp32 log-probs (4 sbV)
    assert terms["activations"] == 2 * 344_064 + 8 * 4096 + 4 * 32 * 2 * 100
    assert terms["parameters"] + terms["gradients"] + terms["optimizer_states"] == 16 * 106_496
    assert est.total_bytes == 16 * 106_496 + terms["activations"]
    # 6N + 12 L s h
    assert est.flops_per_token == 6 * 106_496 + 12 * 2 * 32 * 64


def test_the_papers_per_layer_formula_in_16_bits():
    s, b, h, a = 2048, 1, 12288, 96
    assert layer_activation_bytes(s, b, h, a) == s * b * h * (34 + 5 * a * s // h)
    # Tensor parallel alone (the paper's equation 3) and with sequence parallelism (equation 4).
    assert layer_activation_bytes(s, b, h, a, tensor_parallel=8) == s * b * h * (10 + 24 / 8 + 5 * a * s / (h * 8))
    assert layer_activation_bytes(s, b, h, a, tensor_parallel=8, sequence_parallel=True) == s * b * h * (34 + 80) / 8


@pytest.mark.parametrize(("shape", "saving"), [(GPT3_175B, 0.70), (MT_NLG_530B, 0.65)])
def test_selective_recompute_saves_what_the_paper_reports(shape, saving):
    # The paper: selective recomputation cuts activation memory by 70% (GPT-3) and 65% (MT-NLG).
    base = TransformerEstimateRequest(**shape, tensor_parallel=8, sequence_parallel=True)
    none = estimate_transformer(base).activation_bytes_per_layer
    selective = estimate_transformer(base.model_copy(update={"recompute": "selective"})).activation_bytes_per_layer
    assert 1 - selective / none == pytest.approx(saving, abs=0.01)
    # FlashAttention stores no scores either: the same per-layer bytes.
    flash = estimate_transformer(base.model_copy(update={"flash_attention": True})).activation_bytes_per_layer
    assert flash == selective


@pytest.mark.parametrize("shape", [GPT3_175B, MT_NLG_530B])
def test_sequence_parallel_and_selective_recompute_together_save_about_5x(shape):
    # The abstract: the two techniques reduce activation memory about 5x against tensor parallelism alone.
    tp_only = TransformerEstimateRequest(**shape, tensor_parallel=8)
    both = tp_only.model_copy(update={"sequence_parallel": True, "recompute": "selective"})
    ratio = (
        estimate_transformer(tp_only).activation_bytes_per_layer / estimate_transformer(both).activation_bytes_per_layer
    )
    assert 4.5 < ratio < 5.5


def test_parameter_counts_of_the_papers_models():
    assert parameter_count(TransformerEstimateRequest(**GPT3_175B)) == pytest.approx(175e9, rel=0.01)
    assert parameter_count(TransformerEstimateRequest(**MT_NLG_530B)) == pytest.approx(530e9, rel=0.01)


def test_full_recompute_keeps_layer_inputs_and_one_layer_at_a_time():
    req = TransformerEstimateRequest(**GPT3_175B, tensor_parallel=8, pipeline_parallel=8, sequence_parallel=True)
    full = estimate_transformer(req.model_copy(update={"recompute": "full"}))
    sbh = 2048 * 12288
    assert full.activation_bytes_per_layer == 2 * sbh // 8
    one_layer = estimate_transformer(req).activation_bytes_per_layer
    assert _terms(req.model_copy(update={"recompute": "full"}))["activations"] == 96 * 2 * sbh // 8 + one_layer


def test_pipeline_first_stage_holds_all_layers_activations_and_its_share_of_weights():
    req = TransformerEstimateRequest(**GPT3_175B, tensor_parallel=8, sequence_parallel=True)
    one = estimate_transformer(req)
    staged = estimate_transformer(req.model_copy(update={"pipeline_parallel": 8}))
    # 1F1B: p micro-batches of L/p layers on the first stage, so the layers' activations stay.
    per_layer = one.activation_bytes_per_layer
    assert _terms(req.model_copy(update={"pipeline_parallel": 8}))["activations"] == 96 * per_layer
    assert staged.parameters_per_gpu < one.parameters_per_gpu / 7
    assert staged.parameter_count == one.parameter_count


def test_zero_stages_shard_the_state_as_the_plain_estimator_does():
    base = TransformerEstimateRequest(layers=4, hidden=256, heads=4, sequence=128, vocab=1000, data_parallel=8)
    n = estimate_transformer(base).parameters_per_gpu
    state = {k: v for k, v in _terms(base).items() if k != "activations"}
    assert sum(state.values()) == 16 * n
    z3 = {k: v for k, v in _terms(base.model_copy(update={"zero_stage": 3})).items() if k != "activations"}
    assert sum(z3.values()) == 16 * n // 8


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (dict(hidden=100, heads=3), "must divide by heads"),
        (dict(tensor_parallel=3), "tensor_parallel 3 must divide"),
        (dict(pipeline_parallel=3), "pipeline_parallel 3 must divide layers"),
    ],
)
def test_shapes_that_do_not_divide_are_refused(fields, words):
    shape = dict(layers=4, hidden=256, heads=4, sequence=128, vocab=1000) | fields
    with pytest.raises(ValidationError, match=words):
        TransformerEstimateRequest(**shape)


async def test_the_route_answers_and_refuses_bad_shapes_with_400(jp_fetch):
    async def post(body):
        r = await jp_fetch("gpudojo", "api", "memory", "estimate-transformer", method="POST", body=json.dumps(body))
        return json.loads(r.body)

    small = dict(layers=2, hidden=64, heads=4, sequence=32, micro_batch=2, vocab=100, precision="fp32")
    doc = await post(small)
    assert doc["parameter_count"] == 106_496 and doc["flops_per_token"] == 688_128
    assert [t["component"] for t in doc["terms"]][-1] == "activations"
    for bad in (small | {"heads": 3}, small | {"layers": 0}, small | {"recompute": "half"}, {"layers": 2}):
        with pytest.raises(HTTPClientError) as info:
            await post(bad)
        assert info.value.code == 400
        assert json.loads(info.value.response.body)["error"]["code"] == "invalid_request"


def test_the_lessons_numbers():
    """Lesson 7's small GPT (fp32, no dropout) and its GPT-3 layout, as the lesson prints them."""
    small = TransformerEstimateRequest(
        layers=2, hidden=256, heads=4, sequence=128, micro_batch=4, vocab=512, learned_positions=True,
        precision="fp32", dropout=False,
    )  # fmt: skip
    est = estimate_transformer(small)
    assert est.parameter_count == 1_743_872
    assert _terms(small)["activations"] == 22 * 2**20  # 2 x 10 MiB per layer + 2 MiB output layer
    assert _terms(small.model_copy(update={"flash_attention": True}))["activations"] == 18 * 2**20
    assert est.flops_per_token == 6 * 1_743_872 + 786_432
    gpt3 = TransformerEstimateRequest(**GPT3_175B, tensor_parallel=8, pipeline_parallel=8, sequence_parallel=True)
    gib = {r: estimate_transformer(gpt3.model_copy(update={"recompute": r})) for r in ("none", "selective", "full")}
    assert round(gib["none"].total_bytes / 2**30, 1) == 74.1
    assert round(_terms(gpt3)["activations"] / 2**30, 1) == 32.1
    assert _terms(gpt3.model_copy(update={"recompute": "selective"}))["activations"] < 10 * 2**30
    assert _terms(gpt3.model_copy(update={"recompute": "full"}))["activations"] < 2**30

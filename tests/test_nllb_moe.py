"""NLLB-MoE's routing details against transformers: the layers it makes sparse, the capacity
settings that drop picks (each one changing the output, so the parity cases run it), and the
experts' dispatch the reference corrects."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from converter import build
from converter.models.nllb_moe import is_sparse
from converter.validate.reference_fixes import corrected
from converter.validate.seq2seq_runtime import OnnxSeq2Seq
from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.nllb_moe import CASES, NLLB_MOE
from tests.parity.seq2seq_reference import case_rng, left_padded_text_inputs, make_seq2seq


@pytest.mark.parametrize(("layers", "step"), [(2, 2), (4, 1), (6, 4), (12, 4), (3, 0), (3, -1)])
def test_sparse_layers_are_the_ones_transformers_picks(layers, step):
    config = transformers.NllbMoeConfig(
        **{**NLLB_MOE, "encoder_layers": layers, "encoder_sparse_step": step}
    )
    stack = transformers.NllbMoeModel(config).encoder
    assert [is_sparse(i, max(step, 0)) for i in range(layers)] == [
        layer.is_sparse for layer in stack.layers
    ]


def _encoded(model, feeds, **router):
    """transformers' encoder output with the routers' settings changed."""
    for module in model.modules():
        if isinstance(module, transformers.models.nllb_moe.modeling_nllb_moe.NllbMoeTop2Router):
            for key, value in router.items():
                setattr(module, key, value)
    tensors = {name: torch.from_numpy(value) for name, value in feeds.items()}
    with torch.no_grad():
        return model.get_encoder()(**tensors).last_hidden_state.numpy()


CAPACITY = CASES["nllb-moe:capacity"].config


@pytest.mark.parametrize(
    "changed",
    [
        {"moe_eval_capacity_token_fraction": 1.0},
        {"batch_prioritized_routing": False},
        {"normalize_router_prob_before_dropping": False},
    ],
    ids=lambda v: next(iter(v)),
)
def test_each_capacity_setting_of_the_parity_case_changes_the_output(tmp_path, changed):
    model = make_seq2seq("nllb-moe:capacity", Seq2SeqCase(CAPACITY), tmp_path / "hf")
    feeds = left_padded_text_inputs(CAPACITY, case_rng("nllb-moe:capacity"))
    kept = feeds["attention_mask"][..., None]
    before = _encoded(model, feeds)
    after = _encoded(model, feeds, **changed)
    assert np.abs((before - after) * kept).max() > 1e-3


# the other capacity rules: drops in token order with weights normalized after them, and a
# fixed capacity shared with the padding when the routers route it
VARIANTS = {
    "fraction": {"moe_eval_capacity_token_fraction": 0.25},
    "fixed-with-padding": {
        "moe_eval_capacity_token_fraction": -1.0,
        "expert_capacity": 4,
        "router_ignore_padding_tokens": True,
        "batch_prioritized_routing": True,
    },
}


@pytest.mark.parametrize("ep", ["default", "cpu"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_picks_beyond_capacity_skip_their_expert(tmp_path, variant, ep):
    config = {**NLLB_MOE, "decoder_sparse_step": 0, **VARIANTS[variant]}
    case_id = f"nllb-moe-{variant}"
    model = make_seq2seq(case_id, Seq2SeqCase(config), tmp_path / "hf")
    feeds = left_padded_text_inputs(config, case_rng(case_id))
    kept = feeds["attention_mask"][..., None]
    encoded = _encoded(model, feeds)
    unlimited = _encoded(model, feeds, moe_eval_capacity_token_fraction=1.0)
    assert np.abs((encoded - unlimited) * kept).max() > 1e-3  # the capacity dropped picks
    build(str(tmp_path / "hf"), ep=ep, progress=False).save(tmp_path / ep, progress=False)
    actual = OnnxSeq2Seq(tmp_path / ep).encode(feeds)
    assert np.abs((actual - encoded) * kept).max() <= 1e-4


def test_the_reference_correction_is_still_needed(tmp_path):
    """transformers 5.24 runs expert_1 and expert_0 whatever the router picks; once this fails
    transformers dispatches correctly and converter/validate/reference_fixes.py can go."""
    model = make_seq2seq("nllb-moe", Seq2SeqCase(NLLB_MOE), tmp_path / "hf")
    experts = model.model.encoder.layers[1].ffn.experts
    own = transformers.models.nllb_moe.modeling_nllb_moe.NllbMoeExperts.forward
    hidden = torch.randn(16, NLLB_MOE["d_model"], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        top_1_mask, weights, _ = model.model.encoder.layers[1].ffn.router(hidden)
        assert (top_1_mask.argmax(-1) > 1).any()  # some token's first pick is neither 0 nor 1
        fixed = corrected(model).model.encoder.layers[1].ffn.experts(hidden, top_1_mask, weights)
        as_shipped = own(experts, hidden, top_1_mask, weights)
    assert (fixed - as_shipped).abs().max() > 1e-3

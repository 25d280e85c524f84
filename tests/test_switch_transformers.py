"""Switch Transformers' routing details against transformers: the layers it makes sparse, and
expert capacity, which drops a sequence's tokens beyond it from their expert."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from converter import build
from converter.models.switch_transformers import is_sparse
from converter.validate.seq2seq_runtime import OnnxSeq2Seq
from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.t5 import SWITCH
from tests.parity.seq2seq_reference import case_rng, make_seq2seq, text_inputs


@pytest.mark.parametrize(("layers", "sparse"), [(2, 1), (4, 2), (6, 3), (12, 3), (3, 0), (1, 1)])
def test_sparse_layers_are_the_ones_transformers_picks(layers, sparse):
    config = transformers.SwitchTransformersConfig(
        num_layers=layers, num_decoder_layers=layers, num_sparse_encoder_layers=sparse
    )
    stack = transformers.SwitchTransformersEncoderModel(config).encoder
    step = config.encoder_sparse_step
    assert [is_sparse(i, step) for i in range(layers)] == [b.is_sparse for b in stack.block]


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_tokens_beyond_expert_capacity_skip_the_experts(tmp_path, ep):
    config = {**SWITCH, "expert_capacity": 2}  # 9 tokens, 4 experts: some expert overflows
    model = make_seq2seq("switch-capacity", Seq2SeqCase(config), tmp_path / "hf")
    feeds = text_inputs(config, case_rng("switch-capacity"))
    tensors = {name: torch.from_numpy(value) for name, value in feeds.items()}
    with torch.no_grad():
        encoded = model.get_encoder()(**tensors).last_hidden_state.numpy()
        model.config.expert_capacity = 64
        for block in model.encoder.block:
            if block.is_sparse:
                block.layer[-1].mlp.router.expert_capacity = 64
        unlimited = model.get_encoder()(**tensors).last_hidden_state.numpy()
    kept = feeds["attention_mask"][..., None]
    assert np.abs((encoded - unlimited) * kept).max() > 1e-2  # the capacity dropped tokens
    build(str(tmp_path / "hf"), ep=ep, progress=False).save(tmp_path / ep, progress=False)
    actual = OnnxSeq2Seq(tmp_path / ep).encode(feeds)
    assert np.abs((actual - encoded) * kept).max() <= 1e-4

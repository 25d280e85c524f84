"""transformers' Youtu zeroes the pad token's embedding row when it loads a checkpoint (its
weight init writes that row in place): the converted model computes what the loaded one does."""

import numpy as np
import torch
import transformers

from converter import build
from converter.validate.runtime import OnnxDecoder
from tests.parity.reference import make_checkpoint

PROMPT = np.array([[5, 9, 0, 17, 3, 42]])  # the pad token among them


def test_the_pad_row_is_zeroed_as_transformers_loads_it(tmp_path):
    saved = make_checkpoint("youtu", tmp_path / "hf", pad_token_id=0)
    assert saved.model.embed_tokens.weight[0].abs().sum() > 0
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "hf", attn_implementation="eager"
    )
    assert loaded.model.embed_tokens.weight[0].abs().sum() == 0
    with torch.no_grad():
        expected = loaded(input_ids=torch.tensor(PROMPT)).logits.numpy()
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "onnx", progress=False)
    actual = OnnxDecoder(tmp_path / "onnx").run(PROMPT, np.ones_like(PROMPT), [])[0]
    assert np.abs(expected - actual).max() <= 1e-4

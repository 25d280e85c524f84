"""A model whose layers cache keys and values of different shapes (Gemma 4's full-attention
layers have their own head size and kv heads) and whose last layers keep no cache at all
(they reuse earlier layers') generates in onnxruntime-genai as in transformers: genai_config
declares the first layer's shape, genai reads each layer's from the graph."""

from __future__ import annotations

import onnx
import onnxruntime_genai as og
import pytest
import torch

from converter import build
from tests.parity.reference import make_checkpoint

PROMPT = [5, 17, 33, 9, 60, 71, 12]
NEW_TOKENS = 12


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_genai_runs_layers_of_different_cache_shapes(ep, tmp_path):
    model = make_checkpoint("gemma4_text:head_dims", tmp_path / "hf")
    build(str(tmp_path / "hf"), ep=ep, progress=False).save(tmp_path / "onnx", progress=False)
    graph = onnx.load(tmp_path / "onnx" / "model.onnx", load_external_data=False).graph
    past = [i.type.tensor_type.shape.dim for i in graph.input if i.name.startswith("past_")]
    assert len(past) == 4  # two layers of four keep a cache
    assert len({(d[1].dim_value, d[3].dim_value) for d in past}) == 2
    genai = og.Model(str(tmp_path / "onnx"))
    params = og.GeneratorParams(genai)
    params.set_search_options(max_length=len(PROMPT) + NEW_TOKENS, do_sample=False)
    generator = og.Generator(genai, params)
    generator.append_tokens(PROMPT)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    with torch.no_grad():
        expected = model.generate(
            torch.tensor([PROMPT]),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    assert tokens == expected[0, len(PROMPT) :].tolist()

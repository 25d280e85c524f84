"""The text-generation contract's other inputs: `inputs_embeds` instead of `input_ids` (for the
decoders of vision-language models) and 3-D `position_ids` for multimodal rope (Qwen2-VL),
each against transformers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch
from onnxscript import GraphBuilder

from converter import ConfigError, MobiusError, build
from converter.components.rotary import rotary_cos_sin
from converter.config import Rope
from converter.tasks import TextGenerationTask
from converter.validate.metrics import compare
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.parity.reference import make_checkpoint

RNG = np.random.default_rng(7)
PROMPT = RNG.integers(3, 128, size=(2, 6))
STEPS = [RNG.integers(3, 128, size=(2, 1)) for _ in range(2)]


def _run_embeds(session: ort.InferenceSession, table: np.ndarray) -> list[np.ndarray]:
    """Prefill and decode feeding each token's embedding row, the way a VLM pipeline feeds the
    decoder; the KV cache goes around as usual."""
    past_inputs = [i for i in session.get_inputs() if i.name.startswith("past_key_values.")]
    past = {i.name: np.zeros((2, i.shape[1], 0, i.shape[3]), np.float32) for i in past_inputs}
    outputs = [o.name for o in session.get_outputs()]
    mask = np.ones_like(PROMPT)
    position = np.broadcast_to(np.arange(PROMPT.shape[1]), PROMPT.shape)
    logits_per_call, tokens = [], PROMPT
    for step in [None, *STEPS]:
        if step is not None:
            tokens = step
            mask = np.concatenate([mask, np.ones((2, 1), np.int64)], axis=1)
            position = position[:, -1:] + 1
        feeds = {
            "inputs_embeds": table[tokens],
            "attention_mask": mask,
            "position_ids": np.ascontiguousarray(position),
            **past,
        }
        logits, *presents = session.run(outputs, feeds)
        named = zip(outputs[1:], presents, strict=True)
        past = {n.replace("present", "past_key_values"): v for n, v in named}
        logits_per_call.append(logits)
    return logits_per_call


@pytest.mark.parametrize("case", ["llama", "gemma"])  # gemma scales given embeddings too
@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_inputs_embeds_graph_matches_transformers(case, ep, tmp_path):
    model = make_checkpoint(case, tmp_path / "hf")
    task = TextGenerationTask(inputs_embeds=True)
    package = build(str(tmp_path / "hf"), ep=ep, task=task, progress=False)
    package.save(tmp_path / "onnx", progress=False)
    session = ort.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    assert [i.name for i in session.get_inputs()][:3] == [
        "inputs_embeds",
        "attention_mask",
        "position_ids",
    ]
    table = model.get_input_embeddings().weight.detach().numpy()
    expected = TransformersReference(model).run(PROMPT, np.ones_like(PROMPT), STEPS)
    actual = _run_embeds(session, table)
    diffs = [compare(e, a).max_abs_diff for e, a in zip(expected, actual, strict=True)]
    assert max(diffs) <= 1e-4, diffs


def _onnx_cos_sin(rope: Rope, positions: np.ndarray, folder: Path) -> tuple[np.ndarray, ...]:
    graph = ir.Graph([], [], nodes=[], opset_imports={"": 23})
    builder = GraphBuilder(graph)
    ids = builder.input("position_ids", ir.DataType.INT64, list(positions.shape))
    cos, sin = rotary_cos_sin(builder.op, ids, rope, ir.DataType.FLOAT)
    builder.add_output(cos, "cos")
    builder.add_output(sin, "sin")
    ir.save(ir.Model(graph, ir_version=10), folder / "rotary.onnx")
    session = ort.InferenceSession(str(folder / "rotary.onnx"))
    return tuple(session.run(None, {"position_ids": positions}))


def test_multimodal_rope_turns_each_section_by_its_row_like_qwen2_vl(tmp_path):
    from transformers import Qwen2VLTextConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding

    section = [2, 3, 3]  # sums to head_dim / 2
    config = Qwen2VLTextConfig(
        hidden_size=64,
        num_attention_heads=4,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": section},
    )
    positions = RNG.integers(0, 40, size=(3, 2, 5))  # temporal, height, width rows differ
    cos_hf, sin_hf = Qwen2VLRotaryEmbedding(config)(torch.zeros(1), torch.tensor(positions))
    rope = Rope("default", 10000.0, 16, 128, mrope_section=tuple(section))
    cos, sin = _onnx_cos_sin(rope, positions, tmp_path)
    np.testing.assert_allclose(cos, cos_hf[..., :8].numpy(), atol=1e-6)
    np.testing.assert_allclose(sin, sin_hf[..., :8].numpy(), atol=1e-6)


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_a_decoder_takes_3d_positions(ep, tmp_path):
    """Text-only positions on a multimodal-rope decoder: the three rows agree, and the logits
    equal transformers' (which rotates such a rope plainly)."""
    rope = {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0}
    model = make_checkpoint("qwen2", tmp_path / "hf", rope_scaling=rope)
    task = TextGenerationTask(mrope=True)
    package = build(str(tmp_path / "hf"), ep=ep, task=task, progress=False)
    package.save(tmp_path / "onnx", progress=False)
    session = ort.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    position_ids = next(i for i in session.get_inputs() if i.name == "position_ids")
    assert position_ids.shape == [3, "batch_size", "sequence_length"]
    expected = TransformersReference(model).run(PROMPT, np.ones_like(PROMPT), STEPS)
    actual = OnnxDecoder(tmp_path / "onnx").run(PROMPT, np.ones_like(PROMPT), STEPS)
    diffs = [compare(e, a).max_abs_diff for e, a in zip(expected, actual, strict=True)]
    assert max(diffs) <= 1e-4, diffs


def test_3d_positions_need_a_multimodal_rope(tmp_path):
    make_checkpoint("qwen2", tmp_path / "hf")
    with pytest.raises(ConfigError, match="3-D position_ids need a multimodal rope"):
        build(str(tmp_path / "hf"), task=TextGenerationTask(mrope=True), progress=False)


@pytest.mark.parametrize("case", ["gemma3n_text", "gemma4_text"])
def test_per_layer_token_embeddings_need_input_ids(case, tmp_path):
    make_checkpoint(case, tmp_path / "hf")
    task = TextGenerationTask(inputs_embeds=True)
    with pytest.raises(MobiusError, match="per-layer embeddings are looked up by input_ids"):
        build(str(tmp_path / "hf"), task=task, progress=False)

"""Mixture of experts beyond parity: int4 experts in QMoE, and configs or checkpoints whose
experts disagree refused by name."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch
from safetensors.numpy import load_file, save_file

from converter import build
from converter.config import ArchitectureConfig
from converter.errors import ConfigError, WeightsError
from converter.lowering import count_ops
from converter.quantize import quantize_blocks
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.parity.cases import CASES
from tests.parity.reference import make_checkpoint
from tests.quantized_reference import dequantized_copy

RNG = np.random.default_rng(1)
PROMPT = RNG.integers(3, 128, size=(2, 7))
STEPS = [RNG.integers(3, 128, size=(2, 1)) for _ in range(2)]


@pytest.fixture(scope="module")
def mixtral(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixtral") / "hf"
    make_checkpoint("mixtral", folder)
    return folder


def _experts_dequantized(model, symmetric: bool = True, block: int = 32):
    """transformers with its Linear weights and each expert's [out, in] slice of the stacked
    expert parameters replaced by their int4 round trip (routers, not Linear, stay float; so
    do the head and the embedding, which the builds compared with keep float)."""
    copied = dequantized_copy(model, block, symmetric, head_bits=None)
    with torch.no_grad():
        for param in copied.parameters():
            if param.dim() == 3:
                for expert in param:
                    values = quantize_blocks(np.ascontiguousarray(expert.numpy()), block, symmetric)
                    expert.copy_(torch.from_numpy(values.dequantize()))
    return copied


# glm4_moe: grouped sigmoid routing reaching QMoE as log-weights; its experts are 16 wide
@pytest.mark.parametrize(
    ("case", "block"),
    [("mixtral", 32), ("qwen3_moe", 32), ("olmoe", 32), ("qwen2_moe", 32), ("glm4_moe", 16)],
)
def test_cpu_int4_runs_experts_in_qmoe(case, block, tmp_path):
    """Each sparse layer's experts become one QMoE over 4-bit blocks, reproducing transformers
    on the dequantized weights exactly once the kernels compute in float (accuracy_level 0;
    the package's level 4 takes int8 activations, whose rounding can flip a near-tied expert
    pick on random weights). A wrong nibble order or block layout would scramble the logits."""
    model = make_checkpoint(case, tmp_path / "hf")
    package = build(
        str(tmp_path / "hf"),
        ep="cpu",
        dtype="int4",
        int4_block_size=block,
        int4_head_bits=None,
        progress=False,
    )
    ops = count_ops(package.model)
    sparse = sum(package.config.moe.sparse_layers)
    assert ops["com.microsoft.QMoE"] == package.lowering.fusions["QMoE"] == sparse
    assert ops["com.microsoft.MoE"] == 0
    for node in package.model.graph:
        if node.op_type in ("QMoE", "MatMulNBits"):
            assert node.attributes.get_int("accuracy_level") == 4
            node.attributes["accuracy_level"] = ir.AttrInt64("accuracy_level", 0)
    mask = np.ones_like(PROMPT)
    reference = _experts_dequantized(model, block=block)
    expected = TransformersReference(reference).run(PROMPT, mask, STEPS)
    package.save(tmp_path / "int4", progress=False)
    actual = OnnxDecoder(tmp_path / "int4").run(PROMPT, mask, STEPS)
    diffs = [float(np.abs(e - a).max()) for e, a in zip(expected, actual, strict=True)]
    print(case, "int4 (float compute) vs dequantized transformers, max abs diff:", diffs)
    assert max(diffs) <= 1e-4


@pytest.mark.parametrize("symmetric", [True, False])
def test_default_int4_reads_expert_stacks_through_dequantize_linear(mixtral, tmp_path, symmetric):
    """The portable graph's dense experts hold int4 stacks behind a DequantizeLinear blocked
    along K: exact against transformers on the dequantized weights (onnxruntime's graph
    optimizations off, which would otherwise turn the 2-D ones into int8-activation
    MatMulNBits)."""
    from transformers import AutoModelForCausalLM

    package = build(
        str(mixtral),
        ep="default",
        dtype="int4",
        int4_symmetric=symmetric,
        int4_head_bits=None,  # the experts alone are compared with transformers
        progress=False,
    )
    layers = package.config.num_hidden_layers
    assert package.lowering.fusions["int4_expert_stacks"] == 2 * layers
    assert count_ops(package.model)["DequantizeLinear"] == 2 * layers + 4 * layers
    package.save(tmp_path, progress=False)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    actual = OnnxDecoder(tmp_path, options=options).run(PROMPT, np.ones_like(PROMPT), STEPS)
    model = _experts_dequantized(AutoModelForCausalLM.from_pretrained(mixtral), symmetric)
    expected = TransformersReference(model).run(PROMPT, np.ones_like(PROMPT), STEPS)
    diffs = [float(np.abs(e - a).max()) for e, a in zip(expected, actual, strict=True)]
    print("default int4 vs dequantized transformers, max abs diff:", diffs)
    assert max(diffs) <= 1e-4


def test_int4_block_size_that_does_not_divide_the_experts_keeps_float_moe(mixtral):
    """Experts 96 wide cannot hold 64-value blocks: the float MoE stays, as declared."""
    package = build(str(mixtral), ep="cpu", dtype="int4", int4_block_size=64, progress=False)
    ops = count_ops(package.model)
    assert ops["com.microsoft.MoE"] == package.config.num_hidden_layers
    assert ops["com.microsoft.QMoE"] == 0


def test_int4_expert_scales_that_overflow_float16_are_refused(mixtral, tmp_path):
    """QMoE's f16 scales (CUDA's int4 activations) get the checks an Olive checkpoint's get:
    a block whose scale overflows float16 is refused, naming its stack."""
    copy = shutil.copytree(mixtral, tmp_path / "huge")
    tensors = load_file(copy / "model.safetensors")
    tensors["model.layers.0.block_sparse_moe.experts.3.w2.weight"][0, 0] = 1e6
    save_file(tensors, copy / "model.safetensors", metadata={"format": "pt"})
    package = build(str(copy), ep="cuda", dtype="int4", progress=False)
    stack = "model.layers.0.block_sparse_moe.experts.fc2.scales"
    with pytest.raises(WeightsError, match=re.escape(f"'{stack}': scales overflow float16")):
        package.save(tmp_path / "int4", progress=False)


def test_qmoe_graph_loads_in_onnxruntime(mixtral, tmp_path):
    package = build(str(mixtral), ep="cpu", dtype="int4", progress=False)
    package.save(tmp_path, progress=False)
    session = ort.InferenceSession(str(tmp_path / "model.onnx"))
    assert any(i.name == "input_ids" for i in session.get_inputs())


def _with_config(folder, tmp_path, **changes):
    """A copy of the checkpoint folder whose config.json says otherwise."""
    copy = shutil.copytree(folder, tmp_path / "changed")
    config = json.loads((folder / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, **changes}))
    return copy


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"num_local_experts": 4}, "block_sparse_moe.gate.weight' has shape [8, 64]"),
        ({"num_local_experts": 16}, "block_sparse_moe.gate.weight' has shape [8, 64]"),
        ({"intermediate_size": 64}, "block_sparse_moe.experts.0.w1.weight' has shape [96, 64]"),
    ],
)
def test_checkpoint_experts_that_disagree_with_the_config_are_refused(
    mixtral, tmp_path, changes, named
):
    with pytest.raises(WeightsError, match=re.escape(named)):
        build(str(_with_config(mixtral, tmp_path, **changes)), progress=False)


@pytest.mark.parametrize(
    ("case", "changes", "message"),
    [
        ("mixtral", {"num_experts_per_tok": 9}, "picks 9 experts"),
        ("mixtral", {"num_local_experts": 0}, "at least one expert"),
        ("qwen3_moe", {"num_experts": 0}, "at least one expert"),
        ("qwen3_moe", {"mlp_only_layers": [7]}, "mlp_only_layers"),
    ],
)
def test_impossible_expert_settings_are_refused_at_config_reading(case, changes, message):
    config = {"model_type": case, **CASES[case], **changes}
    with pytest.raises(ConfigError, match=message):
        ArchitectureConfig.from_hf(config)


def test_a_checkpoint_missing_an_expert_is_refused_naming_its_tensor(mixtral, tmp_path):
    copy = shutil.copytree(mixtral, tmp_path / "short")
    tensors = load_file(copy / "model.safetensors")
    del tensors["model.layers.1.block_sparse_moe.experts.7.w3.weight"]
    save_file(tensors, copy / "model.safetensors", metadata={"format": "pt"})
    missing = "missing from the checkpoint: 'model.layers.1.block_sparse_moe.experts.7.w3.weight'"
    with pytest.raises(WeightsError, match=re.escape(missing)):
        build(str(copy), progress=False)


@pytest.mark.parametrize(("case", "layer"), [("deepseek_v3", 61), ("glm4_moe_lite", 47)])
def test_the_released_multi_token_prediction_layer_is_left_unread(case, layer, tmp_path):
    """As transformers ignores it on loading; any other stray tensor is still refused."""
    make_checkpoint(case, tmp_path / "hf")
    tensors = load_file(tmp_path / "hf" / "model.safetensors")
    extra = np.zeros(4, np.float32)
    tensors[f"model.layers.{layer}.eh_proj.weight"] = extra
    save_file(tensors, tmp_path / "hf" / "model.safetensors", metadata={"format": "pt"})
    build(str(tmp_path / "hf"), progress=False)
    tensors["model.layers.1.stray.weight"] = extra
    save_file(tensors, tmp_path / "hf" / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WeightsError, match=re.escape("'model.layers.1.stray.weight'")):
        build(str(tmp_path / "hf"), progress=False)

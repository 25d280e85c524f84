"""GPT-OSS experts stored as MXFP4 (what its Hub checkpoints ship): the dequantization against
known values and transformers' own, and a package built from MXFP4 tensors against
transformers on the same (exactly representable) weights in f32."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file, save_file
from transformers.integrations.mxfp4 import convert_moe_packed_tensors

from converter import build
from converter.errors import WeightsError
from converter.models.gpt_oss import FP4_VALUES, dequantize_mxfp4
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.parity.reference import make_checkpoint


def quantize_mxfp4(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[E, N, K] -> blocks [E, N, K/32, 16], scales [E, N, K/32] and the values they hold."""
    *lead, k = weights.shape
    grouped = weights.reshape(*lead, k // 32, 32)
    peak = np.abs(grouped).max(axis=-1, keepdims=True)
    exponents = np.ceil(np.log2(np.maximum(peak, 1e-30) / 6.0)).astype(np.int32)
    scaled = grouped / np.ldexp(1.0, exponents)
    codes = np.abs(scaled[..., None] - FP4_VALUES).argmin(axis=-1).astype(np.uint8)
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    values = np.ldexp(FP4_VALUES[codes], exponents).reshape(weights.shape)
    # contiguous: safetensors' numpy writer stores an array's buffer in its memory order
    scales = np.ascontiguousarray(exponents[..., 0] + 127, np.uint8)
    return np.ascontiguousarray(blocks), scales, values.astype(np.float32)


def test_dequantize_known_values():
    # one block: codes 0..15 twice, so value 2j sits in the low nibble of byte j
    codes = np.arange(32, dtype=np.uint8) % 16
    blocks = (codes[0::2] | (codes[1::2] << 4)).reshape(1, 1, 1, 16)
    for exponent in (-3, 0, 5):
        scales = np.full((1, 1, 1), 127 + exponent, np.uint8)
        values = dequantize_mxfp4(blocks, scales).astype(np.float32)
        assert values.shape == (1, 1, 32)
        np.testing.assert_array_equal(values[0, 0], FP4_VALUES[codes] * 2.0**exponent)


def test_dequantize_matches_transformers():
    rng = np.random.default_rng(0)
    blocks = rng.integers(0, 256, size=(3, 8, 2, 16), dtype=np.uint8)
    scales = rng.integers(120, 134, size=(3, 8, 2), dtype=np.uint8)
    ours = dequantize_mxfp4(blocks, scales).astype(np.float32)  # [E, N, K]
    theirs = convert_moe_packed_tensors(
        torch.from_numpy(blocks), torch.from_numpy(scales), dtype=torch.float32
    )  # [E, K, N], the layout transformers multiplies with
    np.testing.assert_array_equal(ours, theirs.numpy().transpose(0, 2, 1))


def _mxfp4_checkpoints(folder):
    """A tiny GPT-OSS saved twice: f32 experts rounded to MXFP4 values, and the same as
    MXFP4 blocks and scales with the config's quantization_config."""
    make_checkpoint("gpt_oss", folder / "saved", hidden_size=64, intermediate_size=32)
    tensors = load_file(folder / "saved" / "model.safetensors")
    packed = dict(tensors)
    for name in [n for n in tensors if n.endswith(("gate_up_proj", "down_proj"))]:
        blocks, scales, values = quantize_mxfp4(tensors[name].transpose(0, 2, 1))
        tensors[name] = np.ascontiguousarray(values.transpose(0, 2, 1))
        del packed[name]
        packed[f"{name}_blocks"], packed[f"{name}_scales"] = blocks, scales
    config = json.loads((folder / "saved" / "config.json").read_text())
    quantization = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}
    for kind, weights, extra in (
        ("f32", tensors, {}),
        ("mxfp4", packed, {"quantization_config": quantization}),
    ):
        (folder / kind).mkdir()
        save_file(weights, folder / kind / "model.safetensors")
        (folder / kind / "config.json").write_text(json.dumps({**config, **extra}))


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_mxfp4_checkpoint_converts_exactly(tmp_path, ep):
    _mxfp4_checkpoints(tmp_path)
    build(str(tmp_path / "mxfp4"), ep=ep, progress=False).save(tmp_path / ep, progress=False)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "f32", attn_implementation="eager"
    )
    ids = np.random.default_rng(1).integers(3, 128, size=(2, 7))
    mask, steps = np.ones_like(ids), [ids[:, :1], ids[:, 1:2]]
    expected = TransformersReference(model.eval()).run(ids, mask, steps)
    actual = OnnxDecoder(tmp_path / ep).run(ids, mask, steps)
    diffs = [float(np.abs(e - a).max()) for e, a in zip(expected, actual, strict=True)]
    print(ep, "mxfp4 checkpoint vs transformers on its f32 values:", diffs)
    assert max(diffs) <= 1e-4


def test_mxfp4_blocks_of_the_wrong_shape_are_refused(tmp_path):
    _mxfp4_checkpoints(tmp_path)
    tensors = load_file(tmp_path / "mxfp4" / "model.safetensors")
    name = "model.layers.0.mlp.experts.down_proj_scales"
    tensors[name] = tensors[name][:-1]  # one expert short
    save_file(tensors, tmp_path / "mxfp4" / "model.safetensors")
    with pytest.raises(WeightsError, match="down_proj_scales"):
        build(str(tmp_path / "mxfp4"), progress=False)

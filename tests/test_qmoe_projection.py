"""Projection-specific QMoE: an Olive-quantized Qwen3-MoE (model-wide INT4, each layer's fused
expert projections at their own width) bound into QMoE and MatMulNBits byte for byte.

The checkpoints are made here: a random tiny Qwen3-MoE from transformers, its projections
quantized by this file's own packer into Olive's layout (`<name>_qweight`, `_scales`, `_qzeros`).
The reference is transformers with the dequantized weights loaded.
"""

from __future__ import annotations

import copy
import json
import re
import shutil

import numpy as np
import onnx
import onnx_ir as ir
import pytest
import torch

from converter import build
from converter.errors import ConfigError, WeightsError
from converter.lowering import count_ops
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.checkpoints import write_safetensors
from tests.parity.reference import make_checkpoint

BLOCK = 32
RNG = np.random.default_rng(7)
PROMPT = RNG.integers(3, 128, size=(2, 7))
STEPS = [RNG.integers(3, 128, size=(2, 1)) for _ in range(2)]
SPARSE = (0, 2)  # the case's layers with experts (layer 1 is dense)
PAIRS = [(a, b) for a in (2, 3, 4, 8) for b in (2, 3, 4, 8)]


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """Codes [..., K] -> uint8 rows, code j at bit j * bits from the row's first byte's LSB."""
    rows = codes.reshape(-1, codes.shape[-1]).astype(np.int64)
    out = np.zeros((rows.shape[0], -(-codes.shape[-1] * bits // 8)), np.int64)
    for j in range(codes.shape[-1]):
        byte, shift = divmod(j * bits, 8)
        value = rows[:, j] << shift
        out[:, byte] |= value & 0xFF
        if shift + bits > 8:
            out[:, byte + 1] |= value >> 8
    return out.astype(np.uint8).reshape(*codes.shape[:-1], -1)


def quantize(weight: np.ndarray, bits: int, symmetric: bool, scale_dtype=np.float32):
    """Olive's parts of `weight` [..., K] in blocks of BLOCK along K, and its dequantized value."""
    blocks = weight.reshape(*weight.shape[:-1], -1, BLOCK).astype(np.float32)
    top = (1 << bits) - 1
    if symmetric:
        zero = np.full(blocks.shape[:-1], 1 << (bits - 1))
        scale = np.abs(blocks).max(-1) / max((1 << (bits - 1)) - 1, 1)
    else:
        low, high = np.minimum(blocks.min(-1), 0), np.maximum(blocks.max(-1), 0)
        scale = (high - low) / top
        zero = np.clip(np.round(-low / np.where(scale > 0, scale, 1)), 0, top)
    # widened as a clipping search might leave them: requantizing the dequantized weights
    # round-to-nearest would then give other bytes
    jitter = np.random.default_rng([*weight.shape, bits]).uniform(1.0, 1.25, scale.shape)
    scale = (scale * jitter).astype(scale_dtype)
    step = np.where(scale > 0, scale, 1).astype(np.float32)[..., None]
    codes = np.clip(np.round(blocks / step) + zero[..., None], 0, top)
    values = (codes - zero[..., None]) * scale.astype(np.float32)[..., None]
    parts = {"_qweight": pack(codes.reshape(weight.shape), bits), "_scales": scale}
    if not symmetric:
        parts["_qzeros"] = pack(zero, bits)
    return parts, values.reshape(weight.shape)


def olive_checkpoint(model, folder, pairs, symmetric=True):
    """`model` saved as Olive saves it: every layer projection at the model-wide INT4, the
    experts of sparse layer i at `pairs[i]` (FC1 bits, FC2 bits). Returns the tensors written
    and transformers with the dequantized weights."""
    reference = copy.deepcopy(model)
    tensors, overrides = {}, {}
    with torch.no_grad():
        for name, param in reference.named_parameters():
            array = param.numpy()
            layer = re.match(r"model\.layers\.(\d+)\.mlp\.experts\.(gate_up|down)_proj", name)
            if layer:
                pair = pairs[SPARSE.index(int(layer[1]))]
                bits = pair[layer[2] == "down"]
                overrides[name] = {"bits": bits} | ({"symmetric": True} if bits == 3 else {})
                dtype = np.float16 if 3 in pair else np.float32  # INT3: activation dtype
                parts, values = quantize(array, bits, symmetric or bits == 3, dtype)
            elif name.endswith("_proj.weight"):
                parts, values = quantize(array, 4, symmetric)
            else:
                tensors[name] = array.copy()
                continue
            tensors |= {name + suffix: part for suffix, part in parts.items()}
            param.copy_(torch.from_numpy(values))
    folder.mkdir(parents=True)
    config = {
        "quant_method": "olive",
        "bits": 4,
        "symmetric": symmetric,
        "group_size": BLOCK,
        "overrides": overrides,
    }
    save(folder, tensors, model.config.to_dict() | {"quantization_config": config})
    return tensors, reference.eval()


def save(folder, tensors, config):
    write_safetensors(folder / "model.safetensors", tensors)
    (folder / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def qwen3_moe(tmp_path_factory):
    return make_checkpoint("qwen3_moe", tmp_path_factory.mktemp("hf") / "hf").eval()


def interleaved(stack: np.ndarray) -> np.ndarray:
    """[E, 2I, ...] gate rows then up rows -> gate 0, up 0, gate 1, up 1, ..."""
    half = stack.shape[1] // 2
    out = np.empty_like(stack)
    out[:, 0::2], out[:, 1::2] = stack[:, :half], stack[:, half:]
    return out


def qmoe_nodes(model: ir.Model) -> list[ir.Node]:
    return [n for n in model.graph if n.op_type == "QMoE"]


@pytest.mark.parametrize("pair", PAIRS, ids=[f"fc1_int{a}-fc2_int{b}" for a, b in PAIRS])
def test_every_bit_width_pair_binds_the_checkpoint_bytes(qwen3_moe, tmp_path, pair):
    """Each pair's QMoE holds the checkpoint's own bytes: FC1 codes and scales with gate and
    up rows interleaved, FC2 as saved; widths per projection; INT3 nodes marked draft."""
    other = (4, 4)
    tensors, _ = olive_checkpoint(qwen3_moe, tmp_path / "olive", [pair, other])
    package = build(str(tmp_path / "olive"), ep="cpu", dtype="f16", progress=False)
    nodes = qmoe_nodes(package.model)
    assert len(nodes) == package.lowering.fusions["QMoE"] == len(SPARSE)
    assert count_ops(package.model)["com.microsoft.MoE"] == 0
    for node, layer, (fc1_bits, fc2_bits) in zip(nodes, SPARSE, [pair, other], strict=True):
        attrs = node.attributes
        assert attrs.get_int("expert_weight_bits") == fc1_bits
        assert attrs.get_int("fc2_expert_weight_bits", fc1_bits) == fc2_bits
        assert attrs.get_int("block_size") == BLOCK
        assert attrs.get_int("swiglu_fusion") == 1
        source = f"model.layers.{layer}.mlp.experts"
        fc1, fc1_scales, fc2, fc2_scales = (node.inputs[i].const_value for i in (2, 3, 5, 6))
        np.testing.assert_array_equal(
            fc1.numpy(), interleaved(tensors[f"{source}.gate_up_proj_qweight"])
        )
        scales = interleaved(tensors[f"{source}.gate_up_proj_scales"])  # f16: cast, or INT3's own
        np.testing.assert_array_equal(fc1_scales.numpy(), scales.astype(np.float16))
        np.testing.assert_array_equal(fc2.numpy(), tensors[f"{source}.down_proj_qweight"])
        scales = tensors[f"{source}.down_proj_scales"].astype(np.float16)
        np.testing.assert_array_equal(fc2_scales.numpy(), scales)
        assert node.inputs[11] is None and node.inputs[12] is None  # symmetric: offsets
        assert ("mobius.qmoe_draft" in node.metadata_props) == (3 in (fc1_bits, fc2_bits))
    assert ("mobius.qmoe_draft" in package.model.metadata_props) == (3 in pair)


def test_model_wide_int4_projections_bind_as_matmulnbits(qwen3_moe, tmp_path):
    """Attention and the dense MLP read their packed INT4 bytes in MatMulNBits (q/k/v and
    gate/up packed together, row blocks stacked); the router and LM head stay float."""
    tensors, _ = olive_checkpoint(qwen3_moe, tmp_path / "olive", [(4, 4), (4, 4)], False)
    package = build(str(tmp_path / "olive"), ep="cpu", dtype="f32", progress=False)
    nbits = [n for n in package.model.graph if n.op_type == "MatMulNBits"]
    assert len(nbits) == package.lowering.fusions["int4_matmuls"] == 3 * 2 + 2
    layer = "model.layers.0.self_attn"
    qkv = next(n for n in nbits if n.inputs[1].name.startswith(f"{layer}.q_proj+k_proj+v_proj"))
    names = [f"{layer}.{p}_proj.weight" for p in "qkv"]
    packed = np.concatenate([tensors[f"{n}_qweight"] for n in names])
    assert qkv.inputs[1].const_value.numpy().tobytes() == packed.tobytes()
    zero_points = np.concatenate([tensors[f"{n}_qzeros"] for n in names])
    np.testing.assert_array_equal(qkv.inputs[3].const_value.numpy(), zero_points)
    assert "model.layers.0.mlp.gate.weight" in package.model.graph.initializers


def test_saved_package_reloads_the_same_bytes_from_external_data(qwen3_moe, tmp_path):
    """A mixed INT3/INT2 pair with explicit all-4 INT3 zero points (checked, then omitted) and
    an asymmetric INT8 pair: saved with external data, reloaded byte for byte."""
    tensors, _ = olive_checkpoint(qwen3_moe, tmp_path / "olive", [(3, 2), (8, 8)], False)
    all_fours = pack(np.full((8, 64, 2), 4), 3)
    tensors["model.layers.0.mlp.experts.gate_up_proj_qzeros"] = all_fours
    config = json.loads((tmp_path / "olive" / "config.json").read_text())
    save(tmp_path / "olive", tensors, config)
    package = build(str(tmp_path / "olive"), ep="cpu", dtype="f16", progress=False)
    package.save(tmp_path / "onnx", progress=False)
    saved = onnx.load(tmp_path / "onnx" / "model.onnx", load_external_data=False)
    by_name = {t.name: t for t in saved.graph.initializer}
    int3, int8 = (n for n in saved.graph.node if n.op_type == "QMoE")
    assert int3.input[11] == "" and {p.key for p in int3.metadata_props} >= {"mobius.qmoe_draft"}
    assert by_name[int3.input[2]].data_location == onnx.TensorProto.EXTERNAL
    reloaded = onnx.load(tmp_path / "onnx" / "model.onnx")
    arrays = {t.name: onnx.numpy_helper.to_array(t) for t in reloaded.graph.initializer}
    source = "model.layers.{}.mlp.experts.{}_proj_{}"
    expected = {
        int3.input[2]: interleaved(tensors[source.format(0, "gate_up", "qweight")]),
        int3.input[5]: tensors[source.format(0, "down", "qweight")],
        int3.input[12]: tensors[source.format(0, "down", "qzeros")],
        int8.input[2]: interleaved(tensors[source.format(2, "gate_up", "qweight")]),
        int8.input[11]: interleaved(tensors[source.format(2, "gate_up", "qzeros")]),
        int8.input[6]: tensors[source.format(2, "down", "scales")].astype(np.float16),
    }
    for name, array in expected.items():
        np.testing.assert_array_equal(arrays[name], array, err_msg=name)
    assert any(p.key == "mobius.qmoe_draft" for p in reloaded.metadata_props)


@pytest.mark.parametrize(
    ("pair", "symmetric", "dtype", "bound"),
    [
        ((4, 4), True, "f32", 1e-4),
        ((4, 4), False, "f32", 1e-4),
        ((8, 8), True, "f32", 5e-2),
        ((8, 8), False, "f32", 5e-2),
        ((2, 2), False, "f32", 1e-4),  # onnxruntime 1.32's CPU kernel runs these too
        ((3, 3), True, "f16", 2e-2),  # (f16 activations against a float32 reference)
    ],
)
def test_equal_width_pairs_run_in_cpu_qmoe(qwen3_moe, tmp_path, pair, symmetric, dtype, bound):
    """onnxruntime's CPU QMoE on the checkpoint's bytes reproduces transformers on the
    dequantized weights (float compute for INT4, accuracy_level 0; the block-wise INT8 kernel
    always quantizes its activations to int8: about 1% of the logits' range, against about 1
    for a wrong layout). The routers are scaled
    up so that no rounding flips a token's pick of experts."""
    decisive = copy.deepcopy(qwen3_moe)
    with torch.no_grad():
        for layer in SPARSE:
            decisive.model.layers[layer].mlp.gate.weight.mul_(8.0)
    _, reference = olive_checkpoint(decisive, tmp_path / "olive", [pair, pair], symmetric)
    package = build(str(tmp_path / "olive"), ep="cpu", dtype=dtype, progress=False)
    for node in package.model.graph:
        if node.op_type in ("QMoE", "MatMulNBits"):
            node.attributes["accuracy_level"] = ir.AttrInt64("accuracy_level", 0)
    package.save(tmp_path / "onnx", progress=False)
    mask = np.ones_like(PROMPT)
    actual = OnnxDecoder(tmp_path / "onnx").run(PROMPT, mask, STEPS)
    expected = TransformersReference(reference).run(PROMPT, mask, STEPS)
    diffs = [float(np.abs(e - a).max()) for e, a in zip(expected, actual, strict=True)]
    scale = max(float(np.abs(e).max()) for e in expected)
    print(pair, "symmetric" if symmetric else "asymmetric", "max abs logit diff:", diffs, scale)
    assert max(diffs) <= bound


def _refused(
    model, tmp_path, pairs, error, message, *, dtype="f16", ep="cpu", change=None, symmetric=True
):
    """An Olive checkpoint of `pairs`, `change`d (tensors, quantization_config), is refused."""
    tensors, _ = olive_checkpoint(model, tmp_path / "olive", pairs, symmetric)
    if change is not None:
        settings = json.loads((tmp_path / "olive" / "config.json").read_text())
        change(tensors, settings["quantization_config"])
        save(tmp_path / "olive", tensors, settings)
    with pytest.raises(error, match=re.escape(message)):
        build(str(tmp_path / "olive"), ep=ep, dtype=dtype, progress=False)


EXPERTS0 = "model.layers.0.mlp.experts"


def _set(name, value):
    return lambda tensors, _config: tensors.__setitem__(name, value(tensors[name]))


def _unquantized(tensors, name):
    del tensors[f"{name}_qweight"], tensors[f"{name}_scales"]
    tensors[name] = np.zeros((64, 64), np.float32)


def _override(name, **values):
    return lambda _tensors, config: config["overrides"].__setitem__(name, values)


BAD_LAYOUTS = {
    "fc1 and fc2 blocks differ": (
        [(4, 4), (4, 4)],
        _override(f"{EXPERTS0}.down_proj", bits=4, group_size=16),
        "QMoE takes one block size for both projections",
    ),
    "block does not divide the experts": (
        [(4, 4), (4, 4)],
        lambda _t, config: config["overrides"].update(
            {
                f"{EXPERTS0}.{p}": {"bits": 4, "group_size": 64}
                for p in ("gate_up_proj", "down_proj")
            }
        ),
        "block size 64 does not divide the intermediate size 32",
    ),
    "INT3 scales not in the activation dtype": (
        [(3, 4), (4, 4)],
        _set(f"{EXPERTS0}.down_proj_scales", lambda s: s.astype(np.float32)),
        f"tensor '{EXPERTS0}.down_proj_scales' is F32, expected F16",
    ),
    "negative scale": (
        [(4, 4), (4, 4)],
        _set(f"{EXPERTS0}.gate_up_proj_scales", lambda s: -s),
        f"tensor '{EXPERTS0}.gate_up_proj_scales': scales must be finite and nonnegative",
    ),
    "infinite scale": (
        [(2, 8), (4, 4)],
        _set(f"{EXPERTS0}.down_proj_scales", lambda s: s + np.inf),
        f"tensor '{EXPERTS0}.down_proj_scales': scales must be finite and nonnegative",
    ),
    "scale overflowing the activations": (
        [(4, 4), (4, 4)],
        _set(f"{EXPERTS0}.down_proj_scales", lambda s: s * 1e9),
        f"tensor '{EXPERTS0}.down_proj_scales': scales overflow float16",
    ),
    "codes not uint8": (
        [(4, 4), (4, 4)],
        _set(f"{EXPERTS0}.gate_up_proj_qweight", lambda q: q.view(np.int8)),
        f"tensor '{EXPERTS0}.gate_up_proj_qweight' is I8, expected U8",
    ),
    "INT3 codes packed per block, not per row": (
        [(3, 3), (4, 4)],
        _set(f"{EXPERTS0}.gate_up_proj_qweight", lambda q: np.pad(q, ((0, 0), (0, 0), (0, 1)))),
        f"tensor '{EXPERTS0}.gate_up_proj_qweight' has shape [8, 64, 25], expected [8, 64, 24]",
    ),
    "INT3 zero points other than 4": (
        [(3, 3), (4, 4)],
        lambda t, _c: t.__setitem__(
            f"{EXPERTS0}.down_proj_qzeros", pack(np.full((8, 64, 1), 3), 3)
        ),
        f"tensor '{EXPERTS0}.down_proj_qzeros': INT3 zero points must all be 4",
    ),
    "symmetric INT4 with zero points": (
        [(4, 4), (4, 4)],
        lambda t, _c: t.__setitem__(
            f"{EXPERTS0}.down_proj_qzeros", pack(np.full((8, 64, 1), 8), 4)
        ),
        f"tensor '{EXPERTS0}.down_proj_qzeros': the projection is symmetric",
    ),
    "an override naming a dense layer": (
        [(4, 4), (4, 4)],
        _override("model.layers.1.mlp.experts.down_proj", bits=8),
        "names 'model.layers.1.mlp.experts.down_proj', which is not an expert projection",
    ),
    "a float non-expert projection": (
        [(4, 4), (4, 4)],
        lambda t, _c: _unquantized(t, "model.layers.0.self_attn.o_proj.weight"),
        "'model.layers.0.self_attn.o_proj.weight' is floating point in a checkpoint quantized",
    ),
}


@pytest.mark.parametrize("case", BAD_LAYOUTS)
def test_bad_layouts_are_refused_naming_tensor_and_rule(qwen3_moe, tmp_path, case):
    pairs, change, message = BAD_LAYOUTS[case]
    _refused(qwen3_moe, tmp_path, pairs, WeightsError, message, change=change)


def test_asymmetric_zero_points_must_be_packed_uint8(qwen3_moe, tmp_path):
    change = _set(f"{EXPERTS0}.down_proj_qzeros", lambda z: z.astype(np.float32))
    message = f"tensor '{EXPERTS0}.down_proj_qzeros' is F32, expected U8"
    _refused(
        qwen3_moe, tmp_path, [(2, 4), (4, 4)], WeightsError, message, change=change, symmetric=False
    )


@pytest.mark.parametrize(
    ("pairs", "dtype", "message"),
    [
        ([(3, 4), (4, 4)], "f32", "pairs with INT3 need f16 or bf16 activations"),
        ([(4, 4), (4, 4)], "int4", "build it with its activation dtype"),
    ],
)
def test_activation_dtype_rules(qwen3_moe, tmp_path, pairs, dtype, message):
    error = ConfigError if dtype == "int4" else WeightsError
    _refused(qwen3_moe, tmp_path, pairs, error, message, dtype=dtype)


def test_int3_blocks_must_be_32_64_or_128(qwen3_moe, tmp_path):
    def to_blocks_of_16(tensors, config):
        for name in (f"{EXPERTS0}.gate_up_proj", f"{EXPERTS0}.down_proj"):
            config["overrides"][name]["group_size"] = 16

    # the pair's rules are checked before its tensors' shapes, so these may stay at 32
    message = "pairs with INT3 need a block size of 32, 64, 128, not 16"
    _refused(qwen3_moe, tmp_path, [(3, 2), (4, 4)], WeightsError, message, change=to_blocks_of_16)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"bits": 8}, "quantization_config.bits = 8"),
        ({"lm_head": True}, "quantization_config.lm_head = true"),
        ({"overrides": {"model.layers.0.self_attn.q_proj": {"bits": 8}}}, "only the fused expert"),
        ({"overrides": {"re:.*down_proj": {"bits": 8}}}, "no 're:' patterns"),
        ({"overrides": {f"{EXPERTS0}.down_proj": {"bits": 5}}}, "expert projections take 2, 3"),
        (
            {"overrides": {f"{EXPERTS0}.down_proj": {"bits": 3, "symmetric": False}}},
            "INT3 projections must be symmetric",
        ),
        ({"group_size": -1}, "per-channel and per-tensor"),
    ],
)
def test_olive_settings_mobius_cannot_bind_are_refused(qwen3_moe, tmp_path, settings, message):
    def change(_tensors, config):
        config.update(settings)

    _refused(qwen3_moe, tmp_path, [(4, 4), (4, 4)], ConfigError, message, change=change)


def test_an_ep_without_qmoe_is_refused(qwen3_moe, tmp_path):
    message = "into MatMulNBits and QMoE, which execution provider 'default' does not have"
    _refused(qwen3_moe, tmp_path, [(4, 4), (4, 4)], ConfigError, message, ep="default")


def test_checkpoint_without_olive_config_is_unchanged(qwen3_moe, tmp_path):
    """The float checkpoint beside it still builds the float MoE (no QMoE without int4)."""
    folder = tmp_path / "hf"
    qwen3_moe.save_pretrained(folder)
    package = build(str(folder), ep="cpu", dtype="f32", progress=False)
    assert count_ops(package.model)["com.microsoft.MoE"] == len(SPARSE)
    shutil.rmtree(folder)

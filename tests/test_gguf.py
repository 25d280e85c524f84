"""build-gguf: GGUF files written from tiny transformers models the way llama.cpp writes them,
built, and compared with transformers (F32/F16 on the same weights; quantized types against
transformers holding the dequantized weights); a Q4_0 file's blocks become the cpu/int4
MatMulNBits weights bit for bit."""

from __future__ import annotations

import gc
import json
import re
import struct
from pathlib import Path

import gguf
import numpy as np
import onnx_ir as ir
import pytest

from converter.errors import SourceError, UnsupportedModelError, WeightsError
from converter.gguf.build_gguf import build_gguf
from converter.gguf.config import hf_config
from converter.gguf.reader import GgufFile, GgufTensor
from converter.validate.metrics import compare
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.gguf_files import Q, write_gguf
from tests.parity.reference import make_checkpoint
from tests.parity.test_parity import PROMPT, STEPS, TOLERANCE

# What a GGUF file cannot say, set to what llama.cpp assumes: no sliding window for a Mistral
# written as llama, Gemma 2's query scale 1/sqrt(head_dim). (The llama case has Llama 3 rope
# scaling, which the file holds as rope_freqs.weight.)
GGUF_EXPRESSIBLE = {
    "mistral": {"sliding_window": None},
    "gemma2": {"query_pre_attn_scalar": 24},
}
# Q4_K blocks hold 256 values: rows of 256
Q4_K_SIZES = {"hidden_size": 256, "intermediate_size": 256, "head_dim": 64}
CASES = [
    *[(arch, "F32", "default") for arch in ("llama", "mistral", "qwen2", "qwen3")],
    *[(arch, "F32", "default") for arch in ("gemma", "gemma2", "gemma3_text", "phi3")],
    ("llama", "F16", "cpu"),
    ("qwen2", "BF16", "default"),
    ("gemma3_text", "F16", "cpu"),
    ("phi3", "Q8_0", "cpu"),
    ("qwen3", "Q8_0", "default"),
    ("llama", "Q4_0", "default"),
    ("gemma2", "Q4_0", "cpu"),
    ("llama", "Q4_K", "default"),
    ("qwen2", "Q4_1", "default"),
    ("gemma", "Q5_1", "cpu"),
    ("qwen3", "IQ4_NL", "default"),
]


def _model_and_file(arch: str, kind: str, folder, **sizes):
    model = make_checkpoint(arch, folder / "hf", **GGUF_EXPRESSIBLE.get(arch, {}), **sizes)
    held = write_gguf(model, folder / "model.gguf", Q[kind])
    model.load_state_dict(held, strict=False)  # the weights the file holds, dequantized
    return model, folder / "model.gguf"


@pytest.mark.parametrize(("arch", "kind", "ep"), CASES)
def test_logits_match_transformers(arch, kind, ep, tmp_path):
    model, path = _model_and_file(arch, kind, tmp_path, **(Q4_K_SIZES if kind == "Q4_K" else {}))
    package = build_gguf(path, ep=ep, dtype="f32")
    assert package.config.model_type == ("llama" if arch == "mistral" else arch)
    package.save(tmp_path / "out", progress=False)
    mask = np.ones_like(PROMPT)
    expected = TransformersReference(model).run(PROMPT, mask, STEPS)
    actual = OnnxDecoder(tmp_path / "out").run(PROMPT, mask, STEPS)
    diffs = [compare(e, a).max_abs_diff for e, a in zip(expected, actual, strict=True)]
    print(f"{arch} {kind} {ep}: prefill / decode x3 max abs diff:", diffs)
    assert max(diffs) <= TOLERANCE, diffs
    manifest = json.loads((tmp_path / "out" / "mobius.json").read_text())
    assert manifest["source"]["path"] == str(path.resolve())


def test_q4_0_becomes_cpu_int4_with_its_own_blocks(tmp_path):
    """Llama's q/k rows (stored permuted) and q/k/v packed into one MatMulNBits on cpu: every
    MatMulNBits (and, with int4_head_bits=4, the head's and the embedding's GatherBlockQuantized)
    holds the GGUF's 4-bit codes and f16 scales, re-paired into the kernel's byte order."""
    model, path = _model_and_file("llama", "Q4_0", tmp_path)
    package = build_gguf(path, ep="cpu", dtype="int4", int4_head_bits=4)
    package.save(tmp_path / "out", progress=False)
    saved = ir.load(tmp_path / "out" / "model.onnx").graph
    blocks = _gguf_blocks_by_hf_name(path, model.config)
    nodes = [n for n in saved if n.op_type in ("MatMulNBits", "GatherBlockQuantized")]
    # per layer: packed q/k/v, o, packed gate/up, down; the head; the embedding
    assert len(nodes) == 2 * 4 + 2
    for node in nodes:
        packed, scales = node.inputs[1], node.inputs[2]
        if node.op_type == "GatherBlockQuantized":  # reads the codes through a Reshape
            packed = node.inputs[0].producer().inputs[0]
        expected = np.concatenate([blocks[name] for name in _hf_names(packed.name)])
        codes = np.concatenate((expected[..., 2:] & 0x0F, expected[..., 2:] >> 4), axis=-1)
        want_bytes = codes[..., 0::2] | (codes[..., 1::2] << 4)  # the kernels: pairs per byte
        want_scales = np.ascontiguousarray(expected[..., :2]).view(np.float16)[..., 0]
        assert packed.const_value.numpy().tobytes() == want_bytes.tobytes(), packed.name
        got_scales = scales.const_value.numpy().reshape(want_scales.shape)
        assert np.array_equal(got_scales, want_scales.astype(np.float32)), scales.name
        assert len(node.inputs) == 3  # no zero points: 8, as Q4_0's codes
    mask = np.ones_like(PROMPT)
    expected = TransformersReference(model).run(PROMPT, mask, STEPS)
    actual = OnnxDecoder(tmp_path / "out").run(PROMPT, mask, STEPS)
    e, a = np.concatenate(expected, 1), np.concatenate(actual, 1)
    # cpu MatMulNBits computes with int8 activations (accuracy level 4)
    assert np.abs(e - a).max() / np.abs(e).max() <= 0.05


def _gguf_blocks_by_hf_name(path, config) -> dict[str, np.ndarray]:
    """Each Q4_0 weight's blocks [rows, blocks, 18] in Hugging Face row order."""
    reader = gguf.GGUFReader(path)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
    by_gguf = {t.name: t for t in reader.tensors}
    blocks = {}
    for hf in (*_linear_names(config), "model.embed_tokens.weight", "lm_head.weight"):
        tensor = by_gguf[names.get_name(hf, try_suffixes=(".weight",))]
        rows = np.asarray(tensor.data).reshape(tensor.data.shape[0], -1, 18)
        blocks[hf] = rows[_hf_row_order(hf, config, rows.shape[0])]
    return blocks


def _hf_row_order(name: str, config, n: int) -> np.ndarray:
    """The rows llama.cpp's permutation sent each Hugging Face q/k row to, inverted."""
    if ".q_proj." not in name and ".k_proj." not in name:
        return np.arange(n)
    heads = config.num_attention_heads if ".q_proj." in name else config.num_key_value_heads
    permuted = np.arange(n).reshape(heads, 2, n // heads // 2).swapaxes(1, 2).reshape(-1)
    return np.argsort(permuted)


def _linear_names(config) -> list[str]:
    parts = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
    parts += ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
    return [f"model.layers.{i}.{p}.weight" for i in range(config.num_hidden_layers) for p in parts]


def _hf_names(initializer: str) -> list[str]:
    """'model.layers.0.self_attn.q_proj+k_proj+v_proj.weight.q4' -> its three weights;
    'model.embed_tokens.weight.q4' -> the table."""
    stem, _, modules = re.sub(r"\.weight\..*", "", initializer).rpartition(".")
    return [".".join(filter(None, (stem, m, "weight"))) for m in modules.split("+")]


def test_q4_0_int4_without_its_block_settings_is_requantized(tmp_path):
    """Block size 64 is not Q4_0's: the dequantized weights are quantized again (and run)."""
    _, path = _model_and_file("qwen2", "Q4_0", tmp_path)
    package = build_gguf(path, ep="cpu", dtype="int4", int4_block_size=64)
    package.save(tmp_path / "out", progress=False)
    nodes = [
        n for n in ir.load(tmp_path / "out" / "model.onnx").graph if n.op_type == "MatMulNBits"
    ]
    blocks = [
        n.attributes.get_int("block_size") for n in nodes if n.attributes.get_int("bits") == 4
    ]
    assert len(blocks) == len(nodes) - 1 and set(blocks) == {64}  # all but the 8-bit head


def _write(path, arch="llama", tensors=None, **keys):
    writer = gguf.GGUFWriter(path, arch)
    for key, value in keys.items():
        writer.add_uint32(f"{arch}.{key}", value)
    for name, (array, kind) in (tensors or {}).items():
        writer.add_tensor(name, array, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_refuses_a_file_that_is_not_gguf(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(WeightsError, match="not a GGUF file"):
        build_gguf(path)


def test_refuses_absurd_counts_before_parsing(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 10**12, 1))
    with pytest.raises(WeightsError, match="declares 1,000,000,000,000 tensors"):
        build_gguf(path)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1, 10**9))
    with pytest.raises(WeightsError, match="metadata keys"):
        build_gguf(path)


def test_refuses_a_truncated_file(tmp_path):
    _, path = _model_and_file("qwen2", "F32", tmp_path)
    path.write_bytes(path.read_bytes()[:3000])
    with pytest.raises(WeightsError, match="corrupt GGUF"):
        build_gguf(path)


def test_refuses_an_unsupported_architecture_by_name(tmp_path):
    path = _write(tmp_path / "model.gguf", arch="rwkv7")
    with pytest.raises(UnsupportedModelError, match=r"'rwkv7'.*gemma, gemma2, gemma3, llama"):
        build_gguf(path)


def test_refuses_an_unsupported_tensor_type_by_name(tmp_path):
    """An integer tensor where a weight belongs (ggml's I8) is no weight build-gguf reads."""
    sizes = {"embedding_length": 64, "block_count": 1, "feed_forward_length": 96}
    table = {"token_embd.weight": (np.ones((128, 64), np.int8), None)}
    path = _write(tmp_path / "model.gguf", "qwen2", table, **sizes, **{"attention.head_count": 4})
    with pytest.raises(WeightsError, match=r"'token_embd\.weight' is I8"):
        build_gguf(path)


def test_validate_asks_for_a_safetensors_source(tmp_path):
    from converter.validate import validate

    _, path = _model_and_file("qwen2", "F32", tmp_path)
    build_gguf(path).save(tmp_path / "out", progress=False)
    with pytest.raises(SourceError, match=re.escape(f"from the GGUF file {path.resolve()}")):
        validate(tmp_path / "out")


def test_cli_builds_a_gguf_file(tmp_path, capsys):
    from mobius.cli import main

    _, path = _model_and_file("qwen3", "Q8_0", tmp_path)
    code = main(["build-gguf", str(path), "--output", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    assert "wrote qwen3 (default, f32) package" in capsys.readouterr().out
    assert (tmp_path / "out" / "model.onnx").is_file()
    assert json.loads((tmp_path / "out" / "config.json").read_text())["model_type"] == "qwen3"


def _metadata_only(arch: str, **keys) -> GgufFile:
    """A GGUF file's metadata and token table shape, for what llama.cpp assumes from them."""
    table = GgufTensor("token_embd.weight", "F32", (256, 64), np.empty(0, np.float32))
    meta = {"general.architecture": arch, **{f"{arch}.{k}": v for k, v in keys.items()}}
    return GgufFile(Path("model.gguf"), meta, {table.name: table})


GEMMA_SIZES = {
    "embedding_length": 4608,
    "attention.head_count": 32,
    "attention.key_length": 128,
    "feed_forward_length": 512,
    "attention.sliding_window": 4096,
}


@pytest.mark.parametrize(
    ("arch", "layers", "scalar"),
    [("gemma2", 46, 144), ("gemma2", 42, 128), ("gemma3", 62, 144), ("gemma3", 48, 128)],
)
def test_gemma_27b_scales_queries_by_hidden_over_heads(arch, layers, scalar):
    """As llama.cpp: the 27B models (46 layers for Gemma 2, 62 for Gemma 3) by hidden / heads,
    the others by the head size."""
    config = hf_config(_metadata_only(arch, block_count=layers, **GEMMA_SIZES))
    assert config["query_pre_attn_scalar"] == scalar


def test_gemma3_without_a_pattern_has_every_sixth_layer_global():
    config = hf_config(_metadata_only("gemma3", block_count=12, **GEMMA_SIZES))
    full = [i for i, kind in enumerate(config["layer_types"]) if kind == "full_attention"]
    assert full == [5, 11]
    assert config["rope_local_base_freq"] == 10_000.0


def test_the_package_carries_the_tokenizer_files_made_from_the_metadata(tmp_path, monkeypatch):
    """Whatever converter/gguf/tokenizer.py makes of the metadata lands beside the graph."""
    seen = {}

    def tokenizer_files(metadata):
        seen.update(metadata)
        return {"tokenizer.json": '{"made": "here"}', "tokenizer_config.json": "{}"}

    monkeypatch.setattr("converter.gguf.build_gguf.tokenizer_files", tokenizer_files)
    _, path = _model_and_file("qwen2", "F32", tmp_path)
    package = build_gguf(path)
    package.save(tmp_path / "out", progress=False)
    staging = package.source.path
    del package
    gc.collect()
    assert not staging.exists()  # the stand-in source folder goes with the package
    assert seen["general.architecture"] == "qwen2" and seen["qwen2.block_count"] == 2
    assert json.loads((tmp_path / "out" / "tokenizer.json").read_text()) == {"made": "here"}
    assert (tmp_path / "out" / "tokenizer_config.json").is_file()
    generation = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert generation == {"bos_token_id": 1, "eos_token_id": 2}

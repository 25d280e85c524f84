"""EP records: unsupported pairs refused up front, fallbacks recorded, missing fusions fatal."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import converter.lowering as lowering
from converter import build
from converter.errors import MobiusError
from converter.execution_providers import EXECUTION_PROVIDERS, execution_provider
from converter.lowering import LoweringError
from converter.validate.runtime import OnnxDecoder
from tests.parity.reference import make_checkpoint

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"


@pytest.mark.parametrize(("ep", "dtype"), [("cpu", "bf16"), ("default", "bf16"), ("dml", "bf16")])
def test_unsupported_pair_is_refused_before_any_work(ep, dtype):
    with pytest.raises(MobiusError, match=f"{ep!r} does not run {dtype}.*available for cuda"):
        build("no/such-repo-is-ever-contacted", ep=ep, dtype=dtype)


def test_bad_int4_block_size_is_refused():
    with pytest.raises(MobiusError, match="block size 48"):
        build(str(TINY_LLAMA), ep="cpu", dtype="int4", int4_block_size=48)


def test_every_ep_runs_f16_and_int4():
    for ep in EXECUTION_PROVIDERS.values():
        assert {"f16", "int4"} <= set(ep.dtypes)
        execution_provider(ep.name, "int4")


def test_gqa_fallback_is_recorded(tmp_path):
    build(str(TINY_LLAMA), ep="cuda", dtype="f32", progress=False).save(tmp_path, progress=False)
    lowering_record = json.loads((tmp_path / "mobius.json").read_text())["lowering"]
    assert lowering_record["fusions"]["GroupQueryAttention"] == 0
    assert any("no f32 kernel" in note for note in lowering_record["fallbacks"])


def test_cpu_gets_gqa_when_head_size_allows():
    package = build(str(TINY_LLAMA), ep="cpu", dtype="f32", progress=False)  # head_dim 16
    assert package.lowering.fusions["GroupQueryAttention"] == package.config.num_hidden_layers
    assert package.lowering.fallbacks == []


def test_a_missing_fusion_fails_the_build(monkeypatch):
    monkeypatch.setattr(lowering, "fuse_skip_norms", lambda model: 0)
    with pytest.raises(LoweringError, match="expected 4 skip_norms in the decoder, found 0"):
        build(str(TINY_LLAMA), ep="cpu", dtype="f32", progress=False)


def _head_bits(package_dir: Path) -> dict[str, int]:
    """The bits of each quantized op reading the head or the token table."""
    graph = onnx.load(package_dir / "model.onnx", load_external_data=False).graph
    return {
        node.name: next(a.i for a in node.attribute if a.name == "bits")
        for node in graph.node
        if node.op_type in ("MatMulNBits", "GatherBlockQuantized")
        and any(part in node.name for part in ("lm_head", "embed", "Gemm"))
    }


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_int4_lm_head_is_quantized_and_logits_keep_their_name(ep, tmp_path):
    kept = build(str(TINY_LLAMA), ep=ep, dtype="int4", int4_head_bits=None, progress=False)
    for bits in (8, 4):
        head = build(str(TINY_LLAMA), ep=ep, dtype="int4", int4_head_bits=bits, progress=False)
        assert head.lowering.fusions["int4_matmuls"] == kept.lowering.fusions["int4_matmuls"] + 1
        head.save(tmp_path / str(bits), progress=False)
        providers = ["CPUExecutionProvider"]
        session = ort.InferenceSession(
            str(tmp_path / str(bits) / "model.onnx"), providers=providers
        )
        assert session.get_outputs()[0].name == "logits"
        if ep == "cpu":
            assert set(_head_bits(tmp_path / str(bits)).values()) == {bits}


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_tied_lm_head_gets_a_quantized_copy(ep, tmp_path):
    folder = tmp_path / "hf"
    make_checkpoint("qwen2", folder)  # tied embeddings
    kept = build(str(folder), ep=ep, dtype="int4", int4_head_bits=None, progress=False)
    head = build(str(folder), ep=ep, dtype="int4", progress=False)  # 8-bit by default
    assert head.lowering.fusions["int4_matmuls"] == kept.lowering.fusions["int4_matmuls"] + 1
    head.save(tmp_path / "onnx", progress=False)
    prompt = np.arange(3, 10)[None]
    logits = OnnxDecoder(tmp_path / "onnx").run(prompt, np.ones_like(prompt), [])[0]
    assert logits.shape == (1, 7, 128) and np.isfinite(logits).all()


@pytest.fixture(scope="module")
def windowed(tmp_path_factory) -> Path:
    """Mistral, head size 16, window 4: every EP's GQA kernel takes it, except for the window."""
    folder = tmp_path_factory.mktemp("mistral:window16")
    make_checkpoint("mistral:window16", folder)
    return folder


# A window of 4 keys (transformers' sliding_window=4) as each EP's GroupQueryAttention reads
# local_window_size: cpu measured on onnxruntime 1.32 (tests/parity), cuda and webgpu from
# their kernel sources; dml's kernel ignores the attribute, so the window stays standard ops.
WINDOW_ATTRIBUTE = {"cpu": 4, "cuda": 4, "webgpu": 4, "dml": None}


@pytest.mark.parametrize("ep", sorted(WINDOW_ATTRIBUTE))
def test_each_ep_gets_the_local_window_size_its_kernel_reads(windowed, ep):
    package = build(str(windowed), ep=ep, dtype="f16", progress=False)
    nodes = [n for n in package.model.graph if n.op_type == "GroupQueryAttention"]
    expected = WINDOW_ATTRIBUTE[ep]
    if expected is None:
        assert nodes == []
        assert any("ignores local_window_size" in f for f in package.lowering.fallbacks)
    else:
        assert [n.attributes.get_int("local_window_size") for n in nodes] == [expected] * 2


def test_dml_rotates_outside_its_group_query_attention():
    """DirectML's GQA kernel reads no cos/sin caches: q and k are rotated before it."""
    package = build(str(TINY_LLAMA), ep="dml", dtype="f16", progress=False)
    ops = [n.op_type for n in package.model.graph]
    nodes = [n for n in package.model.graph if n.op_type == "GroupQueryAttention"]
    assert len(nodes) == package.config.num_hidden_layers
    assert all(n.attributes.get_int("do_rotary") == 0 for n in nodes)
    assert ops.count("RotaryEmbedding") == 2 * package.config.num_hidden_layers
    assert any("does not apply do_rotary" in f for f in package.lowering.fallbacks)


def test_a_softcap_the_kernel_ignores_keeps_standard_attention():
    dml, cuda = EXECUTION_PROVIDERS["dml"], EXECUTION_PROVIDERS["cuda"]
    assert "ignores softcap" in dml.gqa_unsupported_reason(16, "f16", softcap=True)
    assert cuda.gqa_unsupported_reason(16, "f16", softcap=True) is None


@pytest.mark.parametrize("ep", ["default", "cpu", "cuda", "dml", "webgpu"])
def test_int4_head_keeps_the_logits_output_typed(ep, tmp_path):
    """The quantized head's node replaces the MatMul whose output is the graph's logits: the
    output keeps its type and shape (the ONNX checker rejects an untyped graph output)."""
    package = build(str(TINY_LLAMA), ep=ep, dtype="int4", progress=False)
    onnx.checker.check_model(str(package.save(tmp_path, progress=False) / "model.onnx"))

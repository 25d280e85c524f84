"""The fp8-kv-cache build feature: the caches between steps are float8 e4m3fn, dequantized
before attention and quantized as they leave (or, on CUDA, read and written by
GroupQueryAttention itself); over a prompt and 32 greedy steps, batch 2, the logits stay close
to an exact cache's and greedy decoding on trained weights does not change; refused by name
where it cannot apply."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime_genai as og
import pytest

from converter import build
from converter.cli import main
from converter.components.cache import CROSS, LayerCache
from converter.components.fp8_cache import check_quantizable
from converter.errors import ConfigError
from converter.kernels import structural_report
from converter.tasks import TextGenerationTask
from converter.validate import validate
from converter.validate.runtime import OnnxDecoder
from tests.checkpoints import (
    TINY_LLAMA,
    copy_tiny_llama,
    edit_config,
    read_safetensors,
    write_safetensors,
)
from tests.parity.encoder_cases import CASES as ENCODER_CASES
from tests.parity.encoder_reference import make_encoder
from tests.parity.reference import make_checkpoint
from tests.parity.vlm_cases import CASES as VLM_CASES
from tests.parity.vlm_reference import make_vlm

FP8 = "fp8-kv-cache"
FLOAT8 = onnx.TensorProto.FLOAT8E4M3FN
STEPS = 32
PROMPT = np.random.default_rng(0).integers(3, 100, size=(2, 8))  # batch 2
# measured on the random families below (docs/build-features.md): cosine >= 0.9945, top-1 >=
# 0.91 (random weights: nearly tied logits, a few flip)
MIN_COSINE, MIN_TOP1 = 0.99, 0.85


def greedy(package: Path, ids: np.ndarray = PROMPT) -> tuple[np.ndarray, np.ndarray]:
    """Each row's greedy tokens over STEPS free-running steps, and the logits of the prompt
    and of each step."""
    steps: list[np.ndarray] = []
    calls = OnnxDecoder(package)._calls(ids, np.ones_like(ids), steps)
    logits = [next(calls)]
    while True:
        steps.append(logits[-1][:, -1:].argmax(-1))
        if len(steps) == STEPS:
            return np.concatenate(steps, axis=1), np.concatenate(logits, axis=1)
        logits.append(next(calls))


def forced(package: Path, tokens: np.ndarray, ids: np.ndarray = PROMPT) -> np.ndarray:
    """The logits of the prompt and of each step, fed `tokens` (per row)."""
    steps = [tokens[:, s : s + 1] for s in range(tokens.shape[1] - 1)]
    return np.concatenate(OnnxDecoder(package).run(ids, np.ones_like(ids), steps), axis=1)


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(((a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)).min())


def trained_as(folder: Path, model_type: str) -> Path:
    """examples/tiny-llama's trained weights as a `model_type` checkpoint computing the same
    function (Qwen2's q/k/v biases zero)."""
    copy_tiny_llama(folder)
    if model_type == "qwen2":
        tensors = read_safetensors(folder / "model.safetensors")
        dtype = tensors["model.norm.weight"].dtype
        for name, tensor in list(tensors.items()):
            if name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight")):
                tensors[name.replace("weight", "bias")] = np.zeros(tensor.shape[0], dtype)
        write_safetensors(folder / "model.safetensors", tensors)
    architecture = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}[model_type]
    edit_config(folder, model_type=model_type, architectures=[architecture])
    return folder


def built(source: Path, out: Path, **options) -> Path:
    build(str(source), progress=False, **options).save(out, progress=False)
    return out


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    """The trained tiny Llama built with the feature through the CLI (portable graph)."""
    out = tmp_path_factory.mktemp("fp8") / "package"
    argv = ["build", "--model", str(trained_as(out.parent / "hf", "llama")), "--output", str(out)]
    assert main([*argv, "--features", FP8, "--no-progress"]) == 0
    return out


def test_the_caches_are_float8_read_through_a_dequantize_and_written_by_a_quantize(tiny_llama):
    graph = onnx.load(tiny_llama / "model.onnx").graph
    pasts = [i for i in graph.input if i.name.startswith("past_key_values.")]
    presents = [o for o in graph.output if o.name.startswith("present.")]
    assert len(pasts) == len(presents) == 4
    assert {v.type.tensor_type.elem_type for v in pasts + presents} == {FLOAT8}
    readers = {name: [n for n in graph.node if name in n.input] for name in (p.name for p in pasts)}
    assert {n.op_type for nodes in readers.values() for n in nodes} == {"DequantizeLinear"}
    writers = [n for n in graph.node if set(n.output) & {p.name for p in presents}]
    assert len(writers) == 4 and {n.op_type for n in writers} == {"QuantizeLinear"}
    scales = {i.name: list(i.dims) for i in graph.initializer if i.name.startswith("kv_cache_")}
    assert scales == {f"kv_cache_scale.{i}.{p}": [2] for i in (0, 1) for p in ("key", "value")}
    manifest = json.loads((tiny_llama / "mobius.json").read_text())
    assert manifest["features"] == [FP8]


@pytest.mark.parametrize(
    ("model_type", "ep", "dtype"),
    [("llama", "default", "f32"), ("llama", "cpu", "f16"), ("qwen2", "cpu", "f32")],
)
def test_greedy_decoding_of_trained_weights_is_unchanged(tmp_path, model_type, ep, dtype):
    source = trained_as(tmp_path / "hf", model_type)
    exact = built(source, tmp_path / "exact", ep=ep, dtype=dtype)
    fp8 = built(source, tmp_path / "fp8", ep=ep, dtype=dtype, features=[FP8])
    tokens, logits = greedy(exact)
    fp8_tokens, _ = greedy(fp8)
    np.testing.assert_array_equal(fp8_tokens, tokens)  # both rows, 32 steps
    fp8_logits = forced(fp8, tokens)
    assert min_cosine(logits, fp8_logits) >= 0.998  # measured 0.9992-0.9993
    assert not np.array_equal(logits, fp8_logits)  # the cache did go through float8


@pytest.mark.parametrize("case", ["llama", "qwen2", "qwen3", "gemma2"])
def test_random_families_stay_close_to_an_exact_cache(tmp_path, case):
    make_checkpoint(case, tmp_path / "hf")
    exact = built(tmp_path / "hf", tmp_path / "exact")
    fp8 = built(tmp_path / "hf", tmp_path / "fp8", features=[FP8])
    tokens, logits = greedy(exact)
    fp8_logits = forced(fp8, tokens)
    assert min_cosine(logits, fp8_logits) >= MIN_COSINE
    assert (logits.argmax(-1) == fp8_logits.argmax(-1)).mean() >= MIN_TOP1


def test_the_task_option_is_the_feature(tmp_path):
    task = TextGenerationTask(kv_cache_dtype="float8e4m3fn")
    package = built(trained_as(tmp_path / "hf", "llama"), tmp_path / "out", task=task)
    graph = onnx.load(package / "model.onnx").graph
    assert graph.input[3].type.tensor_type.elem_type == FLOAT8
    assert json.loads((package / "mobius.json").read_text())["features"] == [FP8]


def test_on_cuda_group_query_attention_reads_and_writes_the_float8_cache(tmp_path):
    source = trained_as(tmp_path / "hf", "llama")
    package = built(source, tmp_path / "cuda", ep="cuda", dtype="f16", features=[FP8])
    graph = onnx.load(package / "model.onnx").graph
    ops = [n.op_type for n in graph.node]
    assert "DequantizeLinear" not in ops and "QuantizeLinear" not in ops
    inputs = {i.name: i.type.tensor_type.elem_type for i in graph.input}
    initializers = {i.name: i for i in graph.initializer}
    gqa = [n for n in graph.node if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == 2
    for layer, node in enumerate(gqa):
        assert node.input[3:5] == [f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"]
        assert {inputs[name] for name in node.input[3:5]} == {FLOAT8}
        assert node.output[1:3] == [f"present.{layer}.key", f"present.{layer}.value"]
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert attributes["k_quant_type"] == attributes["v_quant_type"] == b"PER_CHANNEL"
        assert attributes["kv_cache_bit_width"] == 8
        for scale in node.input[12:14]:  # k_scale, v_scale: float32 [1, kv_heads, 1, head_size]
            assert list(initializers[scale].dims) == [1, 2, 1, 16]
            assert initializers[scale].data_type == onnx.TensorProto.FLOAT
    manifest = json.loads((package / "mobius.json").read_text())
    assert manifest["lowering"]["fusions"]["fp8_cache_gqa"] == 2
    assert structural_report(package / "model.onnx", "cuda")["unsupported_ops"] == []


def test_validate_holds_the_package_to_the_fp8_bounds(tiny_llama):
    report = validate(tiny_llama, reference="transformers")
    assert report.status == "passed", report.failures
    assert "max_abs_diff" not in report.thresholds  # f32's 1e-4 is beyond a float8 cache
    assert report.greedy_match == 1.0
    assert main(["validate", str(tiny_llama), "--reference", "default"]) == 0


def test_onnxruntime_genai_generates_as_with_an_exact_cache(tiny_llama, tmp_path):
    exact = built(trained_as(tmp_path / "hf", "llama"), tmp_path / "exact")
    generated = []
    for package in (exact, tiny_llama):
        model = og.Model(str(package))
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=PROMPT.shape[1] + STEPS, do_sample=False)
        generator = og.Generator(model, params)
        generator.append_tokens(PROMPT[0].tolist())
        while not generator.is_done():
            generator.generate_next_token()
        generated.append(list(generator.get_sequence(0)))
    assert generated[0] == generated[1]
    assert len(generated[0]) == PROMPT.shape[1] + STEPS


@pytest.mark.parametrize(
    ("ep", "why"),
    [("dml", "DirectML has no float8"), ("webgpu", "WebGPU EP has no float8 DequantizeLinear")],
)
def test_eps_without_float8_kernels_are_refused(ep, why):
    with pytest.raises(ConfigError, match=f"feature 'fp8-kv-cache' on {ep}: .*{why}"):
        build(str(TINY_LLAMA), ep=ep, features=[FP8])


def test_a_task_without_a_decoder_cache_is_refused(tmp_path):
    make_encoder("bert", ENCODER_CASES["bert"], ENCODER_CASES["bert"].heads[0], tmp_path)
    with pytest.raises(ConfigError, match=r"feature 'fp8-kv-cache': the \S+ task has no"):
        build(str(tmp_path), features=[FP8], progress=False)


def test_a_multimodal_model_takes_it_with_text_only(tmp_path):
    make_vlm("qwen2_5_vl", VLM_CASES["qwen2_5_vl"], tmp_path / "hf")
    with pytest.raises(ConfigError, match=r"image-text-to-text task has no .* add 'text-only'"):
        build(str(tmp_path / "hf"), features=[FP8], progress=False)
    package = built(tmp_path / "hf", tmp_path / "text", ep="cpu", features=[FP8, "text-only"])
    graph = onnx.load(package / "model.onnx").graph
    assert {i.type.tensor_type.elem_type for i in graph.input[3:]} == {FLOAT8}


def test_latent_and_cross_caches_are_refused(tmp_path):
    make_checkpoint("deepseek_v3", tmp_path)
    with pytest.raises(ConfigError, match="multi-head latent attention's compressed latent"):
        build(str(tmp_path), features=[FP8], progress=False)
    with pytest.raises(ConfigError, match="keeps a 'cross' cache, not keys and values"):
        check_quantizable([LayerCache(CROSS, (2, "sequence", 8), (2, "sequence", 8))])


def test_an_unknown_cache_dtype_is_refused():
    with pytest.raises(ConfigError, match="kv_cache_dtype 'int8': use one of float8e4m3fn"):
        TextGenerationTask(kv_cache_dtype="int8")

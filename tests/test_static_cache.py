"""The `static-cache` build feature: every cache a fixed max_seq_len slots, written in place.

The standard kernel's graph (the portable contract) scatters new keys and values into
key_cache.{i} / value_cache.{i} at write_indices and bounds them by nonpad_kv_seqlen;
GroupQueryAttention (cpu) writes into its max-length past itself, as onnxruntime-genai's shared
buffer feeds it. Both decode greedily, batch 2 with right-padded rows of different lengths,
token for token as transformers does on each row alone; and the feature is refused by name
where it cannot apply."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import onnxruntime_genai as og
import pytest
import torch
import transformers

from converter import build
from converter.cli import main
from converter.components.cache import CONV, SSM, LayerCache, kv_cache
from converter.errors import ConfigError
from converter.tasks import TextGenerationTask
from converter.validate import validate
from converter.validate.runtime import OnnxDecoder
from converter.validate.static_runtime import StaticDecoder
from tests.parity.common import COMMON
from tests.parity.encoder_cases import CASES as ENCODER_CASES
from tests.parity.encoder_reference import make_encoder
from tests.parity.reference import make_checkpoint

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"
MAX_SEQ_LEN = 48
NEW_TOKENS = 32
PROMPTS = np.random.default_rng(7).integers(3, 120, size=(2, 9))
LENGTHS = np.array([9, 5])  # the second row right-padded after 5 tokens

# (case, ep, the contract its kernel gets)
CONTRACTS = [
    ("llama", "default", "write_indices"),
    ("qwen2", "default", "write_indices"),
    ("qwen3", "default", "write_indices"),
    ("mistral", "default", "write_indices"),  # a window of 4 the rows outgrow
    ("phi3:window16", "default", "write_indices"),
    ("gemma2", "default", "write_indices"),  # sliding and full layers, softcaps, sandwich norms
    ("llama", "cpu", "shared_buffer"),  # rotary outside the kernel (head size 24)
    ("qwen2", "cpu", "shared_buffer"),
    ("phi3:window16", "cpu", "shared_buffer"),
    ("gemma2", "cpu", "shared_buffer"),
]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Each case's tiny random checkpoint and transformers' greedy tokens on each prompt row."""
    made = {}

    def make(case: str):
        if case not in made:
            folder = tmp_path_factory.mktemp(case.replace(":", "-"))
            model = make_checkpoint(case, folder, max_position_embeddings=64)
            made[case] = folder, _transformers_greedy(model)
        return made[case]

    return make


def _transformers_greedy(model, prompts=PROMPTS) -> np.ndarray:
    """Each row's greedy tokens, decoded alone through transformers' own cache (no end of
    sequence: `generate` would hide its token from a row that has to go on)."""
    rows = []
    with torch.no_grad():
        for ids, length in zip(prompts, LENGTHS, strict=True):
            out = model(torch.tensor(ids[None, :length]), use_cache=True)
            tokens = [out.logits[0, -1].argmax()]
            for _ in range(NEW_TOKENS - 1):
                step = tokens[-1].reshape(1, 1)
                out = model(step, cache=out.cache, use_cache=True)
                tokens.append(out.logits[0, -1].argmax())
            rows.append(torch.stack(tokens).numpy())
    return np.stack(rows)


def _static_build(folder: Path, ep: str, out: Path) -> Path:
    task = TextGenerationTask(static_cache=True, max_seq_len=MAX_SEQ_LEN)
    return build(str(folder), ep=ep, task=task, progress=False).save(out, progress=False)


def _fused_greedy(package: Path, expected: np.ndarray) -> np.ndarray:
    """The argmax of every position transformers' tokens reach (teacher-forced: equal to
    `expected` exactly when greedy decoding is), through the attention-mask contract."""
    mask = (np.arange(PROMPTS.shape[1]) < LENGTHS[:, None]).astype(np.int64)
    steps = [expected[:, [t]] for t in range(NEW_TOKENS - 1)]
    prefill, *logits = OnnxDecoder(package).run(PROMPTS, mask, steps)
    first = prefill[np.arange(2), LENGTHS - 1].argmax(-1)
    return np.stack([first, *(step[:, -1].argmax(-1) for step in logits)], axis=1)


def _inputs(model: onnx.ModelProto) -> dict[str, list]:
    return {
        i.name: [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim]
        for i in model.graph.input
    }


@pytest.mark.parametrize(("case", "ep", "contract"), CONTRACTS)
def test_greedy_decoding_equals_transformers(checkpoints, tmp_path, case, ep, contract):
    folder, expected = checkpoints(case)
    package = _static_build(folder, ep, tmp_path / "static")
    manifest = json.loads((package / "mobius.json").read_text())
    assert manifest["static_cache"] == {"max_seq_len": MAX_SEQ_LEN, "contract": contract}
    assert manifest["features"] == ["static-cache"]
    model = onnx.load(package / "model.onnx", load_external_data=False)
    inputs, ops = _inputs(model), [n.op_type for n in model.graph.node]
    outputs = {
        o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output
    }
    layers = COMMON["num_hidden_layers"]
    if contract == "write_indices":
        assert "attention_mask" not in inputs
        assert inputs["write_indices"] == inputs["nonpad_kv_seqlen"] == ["batch_size"]
        caches = [inputs[f"{kind}_cache.{i}"] for kind in ("key", "value") for i in range(layers)]
        assert (
            {dims[2] for dims in caches} == {outputs["updated_value_cache.1"][2]} == {MAX_SEQ_LEN}
        )
        assert ops.count("TensorScatter") == 2 * layers
        attention = [n for n in model.graph.node if n.op_type == "Attention"]
        assert len(attention) == layers and all(n.input[6] == "nonpad_kv_seqlen" for n in attention)
        assert {o.domain: o.version for o in model.opset_import}[""] == 24
        assert not (package / "genai_config.json").exists()  # genai cannot feed write_indices
        found = StaticDecoder(package).generate(PROMPTS, LENGTHS, NEW_TOKENS)
    else:
        assert inputs["past_key_values.0.key"][2] == outputs["present.1.value"][2] == MAX_SEQ_LEN
        assert ops.count("GroupQueryAttention") == layers
        search = json.loads((package / "genai_config.json").read_text())["search"]
        assert search["past_present_share_buffer"] and search["max_length"] == MAX_SEQ_LEN
        found = _fused_greedy(package, expected)
    np.testing.assert_array_equal(found, expected)


def test_nonpad_kv_seqlen_bounds_the_keys_attention_reads(tmp_path):
    """A decode step told that its own slot is not valid yet attends the prompt's alone."""
    package = _static_build(TINY_LLAMA, "default", tmp_path / "static")
    options = ort.SessionOptions()
    options.log_severity_level = 3  # unbound caches are copied, not written in place: it warns
    session = ort.InferenceSession(package / "model.onnx", options)
    caches = {
        i.name: np.zeros([2, *i.shape[1:]], np.float32)
        for i in session.get_inputs()
        if "cache" in i.name
    }
    positions = np.arange(PROMPTS.shape[1])[None].repeat(2, 0)
    prefill = {
        "input_ids": PROMPTS,
        "position_ids": positions,
        "write_indices": np.zeros(2, np.int64),
    }
    names = [o.name for o in session.get_outputs()]
    found = session.run(names, {**prefill, "nonpad_kv_seqlen": LENGTHS, **caches})
    found = dict(zip(names, found, strict=True))
    caches = {name.removeprefix("updated_"): v for name, v in found.items() if "cache" in name}
    step = {"input_ids": PROMPTS[:, :1], "position_ids": LENGTHS[:, None], **caches}
    step["write_indices"] = LENGTHS

    def logits(valid):
        return session.run(["logits"], {**step, "nonpad_kv_seqlen": valid})[0]

    assert np.abs(logits(LENGTHS + 1) - logits(LENGTHS)).max() > 1e-3


def test_genai_generates_a_batch_from_the_shared_buffer(tmp_path):
    """onnxruntime-genai runs the cpu static package (rows padded with the pad token after
    them) and generates what transformers does on each row."""
    package = _static_build(TINY_LLAMA, "cpu", tmp_path / "static")
    graph = onnx.load(package / "model.onnx", load_external_data=False)
    assert _inputs(graph)["past_key_values.0.key"][2] == MAX_SEQ_LEN
    genai = og.Model(str(package))
    params = og.GeneratorParams(genai)
    params.set_search_options(do_sample=False, batch_size=2)
    generator = og.Generator(genai, params)
    pad = json.loads((package / "genai_config.json").read_text())["model"]["pad_token_id"]
    prompts = np.where(np.arange(9) < LENGTHS[:, None], PROMPTS + 100, pad)
    generator.append_tokens(prompts)
    tokens = []
    for _ in range(NEW_TOKENS):
        generator.generate_next_token()
        tokens.append(generator.get_next_tokens())
    model = transformers.AutoModelForCausalLM.from_pretrained(TINY_LLAMA, dtype=torch.float32)
    np.testing.assert_array_equal(np.stack(tokens, axis=1), _transformers_greedy(model, prompts))


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_the_cli_builds_a_static_package_validate_passes(tmp_path, ep):
    out = tmp_path / "static"
    argv = ["build", "--model", str(TINY_LLAMA), "--output", str(out), "--no-progress"]
    assert main([*argv, "--ep", ep, "--features", "static-cache", "--max-seq-len", "40"]) == 0
    manifest = json.loads((out / "mobius.json").read_text())
    assert manifest["static_cache"]["max_seq_len"] == 40
    report = validate(out, reference="transformers", steps=8)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0 and report.max_abs_diff < 1e-4


def test_the_cli_refuses_max_seq_len_without_the_feature_before_reading(tmp_path, capsys):
    argv = ["build", "--model", str(tmp_path / "nothing"), "--output", str(tmp_path / "out")]
    assert main([*argv, "--max-seq-len", "64"]) != 0
    assert "needs the 'static-cache' feature" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_seq_len": 64}, "needs the 'static-cache' feature"),
        ({"features": ["static-cache"]}, "needs max_seq_len, a whole number >= 1, not None"),
        ({"features": ["static-cache"], "max_seq_len": 0}, "not 0"),
        ({"features": ["static-cache"], "max_seq_len": True}, "not True"),
        ({"features": ["static-cache"], "max_seq_len": 513}, "past the model's max_position_"),
        (
            {"task": TextGenerationTask(static_cache=True, max_seq_len=32), "max_seq_len": 64},
            "max_seq_len 64 differs from the task's max_seq_len 32",
        ),
        (
            {"task": TextGenerationTask(inputs_embeds=True), "features": ["static-cache"]}
            | {"max_seq_len": 16},
            "a decoder fed embeddings",
        ),
    ],
)
def test_meaningless_requests_are_refused_by_name(arguments, message):
    with pytest.raises(ConfigError, match=message):
        build(str(TINY_LLAMA), progress=False, **arguments)


def test_a_task_without_a_static_cache_refuses_its_size():
    with pytest.raises(ConfigError, match="max_seq_len sizes the static cache"):
        TextGenerationTask(max_seq_len=64)


def test_another_task_is_refused_before_reading(tmp_path):
    with pytest.raises(ConfigError, match=r"applies to text-generation .* not to fill-mask"):
        build(str(tmp_path), task="fill-mask", features=["static-cache"], max_seq_len=8)


def test_an_encoder_is_refused(tmp_path):
    make_encoder("bert", ENCODER_CASES["bert"], "BertModel", tmp_path)
    with pytest.raises(ConfigError, match=r"'static-cache' applies to text-generation .* not to"):
        build(str(tmp_path), features=["static-cache"], max_seq_len=16, progress=False)


@pytest.mark.parametrize(
    ("case", "ep", "message"),
    [
        ("mpt", "default", "ALiBi"),
        ("deepseek_v3", "default", "its layers do not each keep one plain key/value cache"),
        ("hrm_text", "cpu", "its attention reads masks or caches the generic decoder does not"),
        ("llama4_text", "default", "its attention reads masks or caches the generic decoder"),
        ("diffllama", "default", r"its attention \(DiffAttention\) reaches the cache or kernel"),
        ("gpt_oss", "default", "attention sinks need GroupQueryAttention"),
    ],
)
def test_families_the_contract_does_not_cover_are_refused(tmp_path, case, ep, message):
    make_checkpoint(case, tmp_path)
    with pytest.raises(ConfigError, match=f"'static-cache' cannot apply to .*: {message}"):
        build(str(tmp_path), ep=ep, features=["static-cache"], max_seq_len=16, progress=False)


class _RecurrentModel:
    """A model whose layers keep a convolution and a state-space state beside attention."""

    def caches(self):
        return [kv_cache(2, 16), LayerCache(CONV, (64, 3), (64, 3)), LayerCache(SSM, (8,), (8,))]


def test_conv_and_ssm_states_are_refused():
    task = TextGenerationTask(static_cache=True, max_seq_len=16)
    with pytest.raises(ConfigError, match="its caches include conv and ssm state"):
        task.components(_RecurrentModel(), _config(), None)


def _config():
    from converter.config import ConfigReader
    from converter.registry import family_for

    raw = json.loads((TINY_LLAMA / "config.json").read_text())
    family = family_for("llama")
    return family.rules.read(ConfigReader(family.rules.select(raw), "llama"))

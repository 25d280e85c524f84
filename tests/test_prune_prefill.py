"""The `prune-prefill-prefix` build feature: the LM head multiplies each row's last new token
only, so prefill gives logits [batch, 1, vocab]; those equal transformers' (and the unpruned
build's) at that position, decode steps are unchanged, onnxruntime-genai and validate run the
package, and tasks without a next token refuse the feature by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime_genai as og
import pytest
import torch
import transformers

from converter import build
from converter.cli import main
from converter.errors import ConfigError
from converter.validate import validate
from converter.validate.metrics import compare
from converter.validate.reference import TransformersReference
from converter.validate.runtime import OnnxDecoder
from tests.checkpoints import TINY_LLAMA
from tests.parity.encoder_cases import CASES as ENCODER_CASES
from tests.parity.encoder_reference import make_encoder
from tests.parity.reference import make_checkpoint
from tests.parity.vlm_cases import CASES as VLM_CASES
from tests.parity.vlm_reference import make_vlm
from tests.tiny_seq2seq import tiny_bart

PRUNE = "prune-prefill-prefix"
TOLERANCE = 1e-4
RNG = np.random.default_rng(7)
PROMPT = RNG.integers(3, 128, size=(2, 7))
STEPS = [RNG.integers(3, 128, size=(2, 1)) for _ in range(3)]
# heads of every kind: untied (llama), tied with a final softcap (gemma2), a head of its own
# scaling the tied table (dory:tied), AltUp streams before the norm (gemma3n_text), a
# projection after the norm (opt), ALiBi masks (falcon:alibi), a logits multiplier (granite)
FAMILIES = ["llama", "gemma2", "dory:tied", "gemma3n_text", "opt", "falcon:alibi", "granite"]
HEADS = ("MatMul", "MatMulNBits", "Gemm")


def head_input(model) -> str:
    """The op feeding the LM head's multiply: walked back from `logits` to the first MatMul,
    MatMulNBits or Gemm, then from its input through reshapes to what produced the rows."""
    node = next(o for o in model.graph.outputs if o.name == "logits").producer()
    while node.op_type not in HEADS:
        node = node.inputs[0].producer()
    rows = node.inputs[0].producer()
    while rows.op_type in ("Unsqueeze", "Flatten", "Reshape", "Cast"):
        rows = rows.inputs[0].producer()
    return rows.op_type


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    """A tiny family's checkpoint, and its default graph built with and without the feature."""
    folder = tmp_path_factory.mktemp(request.param.replace(":", "-"))
    reference = make_checkpoint(request.param, folder / "hf")
    decoders = {}
    for name, features in (("full", []), ("pruned", [PRUNE])):
        package = build(str(folder / "hf"), features=features, progress=False)
        package.save(folder / name, progress=False)
        decoders[name] = OnnxDecoder(folder / name)
    return reference, decoders, package


def test_the_head_reads_one_row_per_batch_row(family):
    assert head_input(family[2].model) == "GatherND"
    logits = next(o for o in family[2].model.graph.outputs if o.name == "logits")
    assert logits.shape[1] == 1


def test_prefill_last_position_and_decode_match_transformers(family):
    reference, decoders, _ = family
    mask = np.ones_like(PROMPT)
    expected = TransformersReference(reference).run(PROMPT, mask, STEPS)
    pruned = decoders["pruned"].run(PROMPT, mask, STEPS)
    full = decoders["full"].run(PROMPT, mask, STEPS)
    assert pruned[0].shape == (2, 1, expected[0].shape[-1])
    assert compare(expected[0][:, -1:], pruned[0]).max_abs_diff <= TOLERANCE
    np.testing.assert_allclose(pruned[0], full[0][:, -1:], atol=1e-6)
    for step_full, step_pruned in zip(full[1:], pruned[1:], strict=True):
        np.testing.assert_array_equal(step_pruned, step_full)


def test_a_right_padded_row_gives_its_last_real_token(family):
    """onnxruntime-genai pads a batch of prompts on the right: each row's logits are its last
    real token's, not the padding's."""
    _, decoders, _ = family
    mask = np.array([[1] * 7, [1] * 4 + [0] * 3])
    ids = np.where(mask == 1, PROMPT, 0)
    full = decoders["full"].run(ids, mask, [])[0]
    pruned = decoders["pruned"].run(ids, mask, [])[0]
    np.testing.assert_allclose(pruned[:, 0], full[[0, 1], [6, 3]], atol=1e-6)


def test_a_left_padded_row_gives_the_last_column(family):
    _, decoders, _ = family
    mask = np.array([[1] * 7, [0] * 3 + [1] * 4])
    ids = np.where(mask == 1, PROMPT, 0)
    full = decoders["full"].run(ids, mask, STEPS[:1])
    pruned = decoders["pruned"].run(ids, mask, STEPS[:1])
    np.testing.assert_allclose(pruned[0], full[0][:, -1:], atol=1e-6)
    np.testing.assert_array_equal(pruned[1], full[1])


@pytest.mark.parametrize("case", ["llama", "gemma2"])  # an untied head; a tied one
def test_int4_heads_and_fused_kernels(case, tmp_path):
    """cpu/int4 with --int4-head-bits 4: MatMulNBits multiplies the one row (a tied table's int4
    copy too), and the logits equal the unpruned int4 build's at the last position."""
    make_checkpoint(case, tmp_path / "hf")
    logits = {}
    for name, features in (("full", []), ("pruned", [PRUNE])):
        package = build(
            str(tmp_path / "hf"),
            ep="cpu",
            dtype="int4",
            int4_head_bits=4,
            features=features,
            progress=False,
        )
        package.save(tmp_path / name, progress=False)
        logits[name] = OnnxDecoder(tmp_path / name).run(PROMPT, np.ones_like(PROMPT), STEPS[:1])
    head = next(o for o in package.model.graph.outputs if o.name == "logits").producer()
    while head.op_type not in HEADS:
        head = head.inputs[0].producer()
    assert head.op_type == "MatMulNBits"
    assert head_input(package.model) == "GatherND"
    np.testing.assert_allclose(logits["pruned"][0], logits["full"][0][:, -1:], atol=1e-5)
    np.testing.assert_allclose(logits["pruned"][1], logits["full"][1], atol=1e-6)


@pytest.fixture(scope="module")
def cli_package(tmp_path_factory) -> Path:
    """The tiny Llama through the CLI on the cpu EP (GroupQueryAttention) with the feature."""
    out = tmp_path_factory.mktemp("tiny-llama-pruned")
    argv = ["build", "--model", str(TINY_LLAMA), "--output", str(out), "--no-progress"]
    assert main([*argv, "--ep", "cpu", "--features", PRUNE]) == 0
    return out


def test_the_manifest_records_the_feature(cli_package):
    assert json.loads((cli_package / "mobius.json").read_text())["features"] == [PRUNE]


def test_validate_compares_the_last_prefill_position(cli_package):
    report = validate(cli_package, reference="transformers", steps=4)
    assert report.status == "passed", report.failures
    assert report.greedy_match == 1.0
    assert report.max_abs_diff < TOLERANCE


def _genai_greedy(package: Path, prompts: list[list[int]], new_tokens: int) -> list[list[int]]:
    """onnxruntime-genai's greedy tokens for a batch, padded on the right with its pad id."""
    model = og.Model(str(package))
    pad = json.loads((package / "genai_config.json").read_text())["model"]["pad_token_id"]
    width = max(map(len, prompts))
    params = og.GeneratorParams(model)
    params.set_search_options(
        max_length=width + new_tokens, do_sample=False, batch_size=len(prompts)
    )
    generator = og.Generator(model, params)
    generator.append_tokens(np.array([p + [pad] * (width - len(p)) for p in prompts], np.int32))
    tokens = [[] for _ in prompts]
    for _ in range(new_tokens):
        generator.generate_next_token()
        for row, token in zip(tokens, generator.get_next_tokens(), strict=True):
            row.append(int(token))
    return tokens


def test_genai_generates_what_transformers_does(cli_package):
    """A batch of two prompts of different lengths (genai pads the shorter on the right)."""
    prompts = [list(range(5, 30)), list(range(40, 50))]
    model = transformers.AutoModelForCausalLM.from_pretrained(TINY_LLAMA, dtype=torch.float32)
    expected = [
        model.generate(torch.tensor([p]), max_new_tokens=8, min_new_tokens=8, do_sample=False)[
            0, len(p) :
        ].tolist()
        for p in prompts
    ]
    assert _genai_greedy(cli_package, prompts, 8) == expected


def test_a_vision_language_decoder_is_pruned_and_validates(tmp_path):
    make_vlm("qwen2_5_vl", VLM_CASES["qwen2_5_vl"], tmp_path / "hf")
    package = build(str(tmp_path / "hf"), features=[PRUNE], progress=False)
    decoder = next(c for c in package.components if c.role == "decoder")
    assert head_input(decoder.model) == "GatherND"
    package.save(tmp_path / "package", progress=False)
    report = validate(tmp_path / "package", reference="transformers", steps=3)
    assert report.status == "passed", report.failures
    assert report.max_abs_diff < TOLERANCE


def test_encoders_and_seq2seq_refuse_the_feature(tmp_path):
    make_encoder("bert", ENCODER_CASES["bert"], "BertForMaskedLM", tmp_path / "bert")
    message = f"feature '{PRUNE}' is for text generation and vision-language decoders, not "
    with pytest.raises(ConfigError, match=message + "the fill-mask task"):
        build(str(tmp_path / "bert"), features=[PRUNE], progress=False)
    tiny_bart(tmp_path / "bart")
    with pytest.raises(ConfigError, match=message + "the text2text-generation task"):
        build(str(tmp_path / "bart"), features=[PRUNE], progress=False)


def test_every_generative_family_prunes_through_the_one_forward():
    """The gather sits in DecoderLM.forward: a family overriding it would skip the feature."""
    from converter.models.decoder import DecoderLM
    from converter.registry import families

    generative = [f for f in families().values() if f.task == "text-generation"]
    assert generative
    assert all(f.model_class.forward is DecoderLM.forward for f in generative)

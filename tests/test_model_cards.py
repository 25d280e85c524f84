"""Model cards: golden renders, Hub front matter through huggingface_hub's ModelCard, escaping.

The golden files in tests/golden/ are rendered from the fixed inputs below. After an
intended change to the templates, regenerate them and review the diff:

    MOBIUS_UPDATE_GOLDEN=1 python -m pytest tests/test_model_cards.py
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard, ModelCardData

from model_cards import (
    SourceInfo,
    VariantInfo,
    card_path,
    front_matter,
    human_size,
    pr_description,
    pr_title,
    render,
    variant_folder,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("MOBIUS_UPDATE_GOLDEN") == "1"
SHA = "3f2a9c41d0e5b7a8c9d0e1f2a3b4c5d6e7f80912"
COMMAND = "mobius convert acme/tiny-chat --ep cpu,cuda,webgpu --dtype f32,f16,int4 --publish pr"

SOURCE = SourceInfo(
    repo_id="acme/tiny-chat",
    revision=SHA,
    model_type="llama",
    pipeline_tag="text-generation",
    card_data={"license": "apache-2.0", "language": ["en"], "library_name": "transformers"},
)
VERSIONS = {
    "mobius": "0.1.0",
    "onnx": "1.23.2",
    "onnx_ir": "1.1.0",
    "onnxscript": "0.7.2",
    "onnxruntime": "1.32.0",
}


def _manifest(ep: str, dtype: str, fallbacks: tuple[str, ...] = ()) -> dict:
    return {
        "source": {"repo_id": SOURCE.repo_id, "revision": SHA, "path": None},
        "model_type": "llama",
        "task": "text-generation",
        "ep": ep,
        "dtype": dtype,
        "opset": 23,
        "lowering": {"fusions": {"GroupQueryAttention": 2}, "fallbacks": list(fallbacks)},
        "versions": VERSIONS,
        "built_at": "2026-11-29T18:55:48+00:00",
    }


def _passed(ep: str, dtype: str, diff: float, top1: float) -> dict:
    return {
        "package": f"/out/{ep}-{dtype}",
        "ep": ep,
        "dtype": dtype,
        "status": "passed",
        "reference": "transformers",
        "max_abs_diff": diff,
        "min_cosine": 0.999,
        "top1_agreement": top1,
        "greedy_match": 1.0,
        "load_seconds": 0.01,
        "tokens_per_second": 250.0,
        "thresholds": {},
        "failures": [],
        "structural": None,
        "fallbacks": [],
    }


def _not_executed(ep: str, dtype: str, unsupported: list[str]) -> dict:
    return {
        **_passed(ep, dtype, 0.0, 0.0),
        "status": "not executed",
        "reference": None,
        "max_abs_diff": None,
        "min_cosine": None,
        "top1_agreement": None,
        "greedy_match": None,
        "load_seconds": None,
        "tokens_per_second": None,
        "structural": {
            "ep": ep,
            "checker": "ok",
            "unsupported_ops": unsupported,
            "executed": False,
            "status": "not executed (structural check only)",
        },
    }


def _variant(manifest: dict, report: dict | None, size: int) -> VariantInfo:
    ep, dtype = manifest["ep"], manifest["dtype"]
    return VariantInfo(variant_folder(ep, dtype), ep, dtype, size, manifest, report)


GQA_FALLBACK = "standard Attention op instead of GroupQueryAttention: head_size 8 is not ok"
VARIANTS = [
    _variant(_manifest("cuda", "f16"), _not_executed("cuda", "f16", []), 1_234_567_890),
    _variant(_manifest("cpu", "int4"), _passed("cpu", "int4", 1.6729, 0.8696), 358_813),
    _variant(
        _manifest("webgpu", "int4", (GQA_FALLBACK,)),
        _not_executed(
            "webgpu",
            "int4",
            ["node 'n3' (com.microsoft::MatMulNBits, opset 1): no webgpu kernel for opset 1"],
        ),
        300_000,
    ),
    _variant(_manifest("cpu", "f32"), _passed("cpu", "f32", 3.05e-06, 1.0), 2_048),
]


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} missing: run with MOBIUS_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} changed: review, then MOBIUS_UPDATE_GOLDEN=1"


def _front_matter_text(card: str) -> str:
    match = re.match(r"---\n(.*?)\n---\n", card, re.S)
    assert match, card[:200]
    return match.group(1)


def _tables(card: str) -> list[list[str]]:
    """Consecutive lines starting with '|' outside code fences."""
    tables: list[list[str]] = []
    current: list[str] = []
    fenced = False
    for line in card.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


def _assert_tables_intact(card: str) -> None:
    tables = _tables(card)
    assert tables
    for table in tables:
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
        assert len(widths) == 1, table
        assert all(line.endswith("|") for line in table), table


@pytest.mark.parametrize("mode", ["pr", "repo"])
def test_card_golden(mode):
    card = render(SOURCE, VARIANTS, mode=mode, command=COMMAND, repo_id=_target(mode))
    _check_golden(f"card_{mode}.md", card)


def test_pr_description_golden():
    text = f"{pr_title(SOURCE, VARIANTS)}\n\n{pr_description(SOURCE, VARIANTS)}"
    _check_golden("pr_description.md", text)


def _target(mode: str) -> str | None:
    return None if mode == "pr" else "someone/tiny-chat-ONNX"


@pytest.mark.parametrize("mode", ["pr", "repo"])
def test_front_matter_round_trips_through_model_card(mode):
    text = render(SOURCE, VARIANTS, mode=mode, command=COMMAND, repo_id=_target(mode))
    card = ModelCard(text)
    assert card.data.base_model == "acme/tiny-chat"
    assert card.data.license == "apache-2.0"
    assert card.data.pipeline_tag == "text-generation"
    assert card.data.tags == [
        *("onnx", "onnxruntime", "onnxruntime-genai", "mobius"),
        *("cpu", "cuda", "webgpu", "f32", "f16", "int4"),
    ]
    assert card.data.library_name is None  # the source's "transformers" does not apply
    original = _front_matter_text(text)
    assert card.data.to_yaml() == original
    assert ModelCardData(**card.data.to_dict()).to_yaml() == original
    assert yaml.safe_load(original) == front_matter(SOURCE, VARIANTS)
    assert card.text.lstrip().startswith("# acme/tiny-chat for ONNX Runtime")


def test_output_is_deterministic_and_sorted():
    shuffled = VARIANTS[:]
    random.Random(3).shuffle(shuffled)
    card = render(SOURCE, shuffled, mode="pr", command=COMMAND)
    assert card == render(SOURCE, VARIANTS, mode="pr", command=COMMAND)
    rows = [line for line in card.splitlines() if line.startswith("| [`onnx/")]
    assert [row.split("`")[1] for row in rows] == [
        "onnx/cpu-f32",
        "onnx/cpu-int4",
        "onnx/cuda-f16",
        "onnx/webgpu-int4",
    ]
    assert "](cpu-f32/)" in card  # links are relative to onnx/README.md in a PR
    repo_card = render(SOURCE, VARIANTS, mode="repo", command=COMMAND, repo_id="me/x-ONNX")
    assert "](onnx/cpu-f32/)" in repo_card


def test_license_other_when_unknown():
    source = SourceInfo("acme/tiny-chat", SHA, "llama")
    card = ModelCard(render(source, VARIANTS, mode="pr", command=COMMAND))
    assert card.data.license == "other"
    assert card.data.license_name == "tiny-chat-license"
    assert card.data.license_link == "https://huggingface.co/acme/tiny-chat"
    assert card.data.pipeline_tag == "text-generation"  # from the task when the source has none


def test_custom_license_keeps_name_and_pins_relative_link():
    source = SourceInfo(
        "acme/tiny-chat",
        SHA,
        "llama",
        card_data={"license": "other", "license_name": "acme-community", "license_link": "LICENSE"},
    )
    data = front_matter(source, VARIANTS)
    assert data["license"] == "other"
    assert data["license_name"] == "acme-community"
    assert data["license_link"] == f"https://huggingface.co/acme/tiny-chat/blob/{SHA}/LICENSE"
    explicit = SourceInfo("acme/tiny-chat", SHA, "llama", license="mit", card_data=source.card_data)
    assert front_matter(explicit, VARIANTS)["license"] == "mit"  # explicit fields win


def test_odd_license_and_text_from_source_stay_out_of_yaml_and_tables():
    odd = 'Apache 2.0 | see "LICENSE"\n---\nkey: [value]'
    source = SourceInfo(
        "acme/tiny-chat",
        SHA,
        "llama | custom\nnext line",
        pipeline_tag="text generation: yes",
        card_data={"license": odd, "license_link": "https://example.com/a b|c\nd"},
    )
    text = render(source, VARIANTS, mode="pr", command=COMMAND)
    card = ModelCard(text)
    assert card.data.license == "other"
    assert card.data.license_name == "apache-2.0-see-license-key-value"
    assert card.data.license_link == "https://example.com/a%20b%7Cc%0Ad"
    assert card.data.pipeline_tag == "text-generation"
    assert card.data.to_yaml() == _front_matter_text(text)
    _assert_tables_intact(text)
    license_row = next(line for line in text.splitlines() if line.startswith("| License |"))
    assert 'Apache 2.0 \\| see "LICENSE" --- key: [value]' in license_row
    assert "| Architecture | `llama \\| custom next line` |" in text


def test_failed_and_not_executed_variants():
    failed = {
        **_passed("cpu", "f16", 0.31, 0.9),
        "status": "failed",
        "failures": ["max_abs_diff 0.31 misses the f16 bound 0.05", "top1 | bad\nsecond line"],
    }
    broken = _not_executed("dml", "f16", [])
    broken["structural"]["checker"] = "ValidationError: Field 'type' of 'value_info'\nline 2"
    variants = [
        _variant(_manifest("cpu", "f16"), failed, 10_000),
        _variant(_manifest("dml", "f16"), broken, 10_000),
        _variant(_manifest("default", "f32"), None, 10_000),
    ]
    text = render(SOURCE, variants, mode="pr", command=COMMAND)
    _assert_tables_intact(text)
    assert (
        "| **FAILED**: max_abs_diff 0.31 misses the f16 bound 0.05; top1 \\| bad second line "
        "| 0.31 | 90.0% | 100.0% |"
    ) in text
    assert (
        "not executed on this host (structural check: ONNX checker: ValidationError: "
        "Field 'type' of 'value_info' line 2, all kernels present)"
    ) in text
    assert "| not validated | — | — | — |" in text
    assert "- cpu-f16: **failed** validation" in text
    assert "- Validated on CPU only: dml-f16 was not executed" in text
    assert "default" not in ModelCard(text).data.tags
    description = pr_description(SOURCE, variants)
    _assert_tables_intact(description)
    assert "**cpu-f16 failed validation**" in description
    assert "`transformers` (float32)" in description  # the failed variant ran
    nothing_ran = pr_description(SOURCE, variants[1:])
    assert "No variant was executed on the conversion host, so there are no figures." in nothing_ran


def test_usage_snippets_compile_and_name_the_target_repo():
    text = render(SOURCE, VARIANTS, mode="repo", command=COMMAND, repo_id="me/tiny-chat-ONNX")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3
    for block in blocks:
        compile(block, "<card>", "exec")
    assert 'snapshot_download("me/tiny-chat-ONNX"' in blocks[0]
    assert 'folder = "onnx/cpu-f32"' in blocks[0]  # a passing CPU variant
    assert "tokenizer.apply_chat_template(json.dumps(messages)" in blocks[1]
    assert 'providers=["CPUExecutionProvider"]' in blocks[2]
    gpu_only = [v for v in VARIANTS if v.ep == "cuda"]
    gpu = render(SOURCE, gpu_only, mode="pr", command=COMMAND)
    assert 'config.append_provider("cuda")' in gpu
    assert 'providers=["CUDAExecutionProvider"]' in gpu


def test_command_is_fenced_and_tokens_are_redacted():
    command = "mobius convert acme/tiny-chat --token hf_abcdefghijklmnop ```"
    text = render(SOURCE, VARIANTS, mode="pr", command=command)
    assert "hf_abcdefghijklmnop" not in text
    assert "````bash\nmobius convert acme/tiny-chat --token hf_*** ```\n````" in text


def test_render_refuses_bad_input():
    with pytest.raises(ValueError, match="repo_id"):
        render(SOURCE, VARIANTS, mode="repo", command=COMMAND)
    with pytest.raises(ValueError, match="mode"):
        render(SOURCE, VARIANTS, mode="both", command=COMMAND)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one variant"):
        render(SOURCE, [], mode="pr", command=COMMAND)
    bad = copy.copy(VARIANTS[0])
    object.__setattr__(bad, "folder", "onnx/../x y")
    with pytest.raises(ValueError, match="variant folder"):
        render(SOURCE, [bad], mode="pr", command=COMMAND)
    with pytest.raises(ValueError, match="repo id"):
        render(SourceInfo("not a repo", SHA, "llama"), VARIANTS, mode="pr", command=COMMAND)


def test_paths_and_sizes():
    assert card_path("pr") == "onnx/README.md"
    assert card_path("repo") == "README.md"
    assert variant_folder("cuda", "int4") == "onnx/cuda-int4"
    assert human_size(512) == "512 B"
    assert human_size(358_813) == "350.4 KiB"
    assert human_size(1_234_567_890) == "1.1 GiB"


def test_variant_from_package(tmp_path):
    (tmp_path / "mobius.json").write_text(json.dumps(_manifest("cpu", "int4")))
    (tmp_path / "model.onnx.data").write_bytes(b"\0" * 1000)
    report = _passed("cpu", "int4", 1.0, 1.0)
    variant = VariantInfo.from_package(tmp_path, report)
    assert (variant.folder, variant.ep, variant.dtype) == ("onnx/cpu-int4", "cpu", "int4")
    assert variant.size_bytes == 1000 + (tmp_path / "mobius.json").stat().st_size
    assert variant.manifest["opset"] == 23 and variant.report is report


def test_source_from_model_info():
    class Info:
        id = "acme/tiny-chat"
        sha = SHA
        pipeline_tag = "text-generation"
        card_data = ModelCardData(license="mit", tags=["chat"])

    source = SourceInfo.from_model_info(Info(), model_type="llama")
    assert (source.repo_id, source.revision, source.model_type) == ("acme/tiny-chat", SHA, "llama")
    assert front_matter(source, VARIANTS)["license"] == "mit"


def test_card_of_packages_kept_on_disk_is_full_minus_hub_fields():
    """A local-folder conversion (or one not published) gets the whole card: the variants table
    with its figures and the usage snippets, without Hub links, base_model or PR wording."""
    local = SourceInfo.local("/home/me/models/tiny-chat", model_type="llama")
    card = render(local, VARIANTS, mode="local", command="mobius convert ./tiny-chat --ep cpu")
    _check_golden("card_local.md", card)
    assert card_path("local") == "onnx/README.md"
    front = yaml.safe_load(_front_matter_text(card))
    assert "base_model" not in front and "license" not in front
    assert front["tags"][:4] == ["onnx", "onnxruntime", "onnxruntime-genai", "mobius"]
    assert "# tiny-chat for ONNX Runtime" in card and "/home/me" not in card
    assert "| [`onnx/cpu-f32`](cpu-f32/) | cpu | f32 |" in card and "3.05e-06" in card
    assert "huggingface.co" not in card and "snapshot_download" not in card
    assert "pull request" not in card
    assert 'path = "onnx/cpu-f32"' in card and "og.Generator(model, params)" in card
    hub_unpublished = render(SOURCE, VARIANTS, mode="local", command=COMMAND)
    assert "pull request" not in hub_unpublished and "base_model: acme/tiny-chat" in hub_unpublished


def test_card_names_a_ref_that_is_not_a_branch_and_the_reason_for_a_repo_name():
    pr_ref = SourceInfo("acme/tiny-chat", SHA, "llama", ref="refs/pr/7")
    note = "`me/tiny-chat-ONNX` already holds the export of `else/tiny-chat`"
    card = render(
        pr_ref, VARIANTS, mode="repo", command=COMMAND, repo_id="me/acme-tiny-chat-ONNX", note=note
    )
    assert f"from `refs/pr/7` at [`{SHA}`]" in card
    assert "**Not a reviewed revision:**" in card and f"> {note}" in card
    assert pr_title(pr_ref, VARIANTS).endswith("converted by mobius from refs/pr/7")
    assert "Not a reviewed revision" in pr_description(pr_ref, VARIANTS)
    tagged = SourceInfo("acme/tiny-chat", SHA, "llama", ref="v1.0")
    assert "Not a reviewed revision" not in render(tagged, VARIANTS, mode="pr", command=COMMAND)


def test_card_shows_transformers_js_for_portable_variants():
    variants = [
        _variant(_manifest("cpu", "int4"), None, 10_000),
        _variant(_manifest("default", "int4"), None, 3_000_000_000),
        _variant(_manifest("default", "f32"), None, 10_000),
    ]
    pr = render(SOURCE, variants, mode="pr", command=COMMAND)
    section = pr.split("### Transformers.js")[1].split("### onnxruntime")[0]
    assert "names Transformers.js loads, `onnx/model.onnx`, `onnx/model_q4.onnx`, beside" in section
    assert 'pipeline("text-generation", "acme/tiny-chat", {' in section
    assert 'dtype: "fp32",' in section and 'revision: "refs/pr/<number>"' in section
    assert "use_external_data_format: true" in section  # over 2 GB, and config.json is theirs
    repo = render(SOURCE, variants, mode="repo", command=COMMAND, repo_id="me/tiny-chat-ONNX")
    section = repo.split("### Transformers.js")[1].split("### onnxruntime")[0]
    assert '"me/tiny-chat-ONNX"' in section and "refs/pr" not in section
    assert "use_external_data_format" not in section  # the export's config.json declares it
    assert "transformers.js" in ModelCard(repo).data.tags
    assert "Transformers.js" not in render(SOURCE, variants[:1], mode="pr", command=COMMAND)

"""Each text encoder-decoder family's own generation task: translation for the translation
models (Marian, M2M-100/NLLB, NLLB-MoE, FSMT), summarization for the Pegasus family and LED, else
text2text-generation. `task=` picks another of the three, and only those; the graphs are the
same bytes under each name, only mobius.json's task differs."""

from __future__ import annotations

import hashlib
import json

import pytest

from converter import build
from converter.errors import ConfigError
from converter.registry import families, family_for, scope_of
from converter.tasks.choice import task_of
from converter.tasks.seq2seq import SEQ2SEQ_TASKS
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq

DEFAULTS = {
    "marian": "translation",
    "m2m_100": "translation",
    "nllb-moe": "translation",
    "fsmt": "translation",
    "pegasus": "summarization",
    "pegasus_x": "summarization",
    "led": "summarization",
    "bigbird_pegasus": "summarization",
}
TEXT_FAMILIES = sorted(
    t for t, f in families().items() if scope_of(f) == "seq2seq" and f.task in SEQ2SEQ_TASKS
)


@pytest.mark.parametrize("model_type", TEXT_FAMILIES)
def test_every_generation_head_converts_for_the_family_s_task(model_type):
    family = family_for(model_type)
    task = DEFAULTS.get(model_type, "text2text-generation")
    assert family.task == task
    for head in ("XForConditionalGeneration", "MarianMTModel", "XModel"):
        assert task_of({"architectures": [head]}, family, None) == task
    assert task_of({}, family, None) == task


@pytest.mark.parametrize("model_type", ["marian", "pegasus", "bart"])
def test_the_asked_task_wins_among_the_generation_tasks_only(model_type):
    family = family_for(model_type)
    for asked in SEQ2SEQ_TASKS:
        assert task_of({"architectures": ["XForConditionalGeneration"]}, family, asked) == asked
    message = "convert for summarization, text2text-generation, translation, not fill-mask"
    with pytest.raises(ConfigError, match=message):
        task_of({}, family, "fill-mask")


def _digests(folder) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in (folder / "onnx").iterdir()}


def test_the_three_task_names_give_the_same_graphs(tmp_path):
    make_seq2seq("marian", CASES["marian"], tmp_path / "hf")
    digests = {}
    for task in (None, *SEQ2SEQ_TASKS):
        package = build(str(tmp_path / "hf"), task=task, progress=False)
        out = package.save(tmp_path / str(task), progress=False)
        assert json.loads((out / "mobius.json").read_text())["task"] == (task or "translation")
        digests[task] = _digests(out)
    assert set(digests["translation"]) == {"encoder_model.onnx", "decoder_model_merged.onnx"}
    assert all(d == digests["translation"] for d in digests.values())
    with pytest.raises(ConfigError, match="not fill-mask"):
        build(str(tmp_path / "hf"), task="fill-mask", progress=False)

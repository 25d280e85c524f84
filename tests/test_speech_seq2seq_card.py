"""The card of a Whisper export: Optimum's ORTModelForSpeechSeq2Seq usage, every variant's
Optimum and onnxruntime-genai graphs, and onnxruntime-genai usage of a variant folder."""

from __future__ import annotations

import re

import pytest

from converter import build
from model_cards.card import SourceInfo, VariantInfo, render
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    root = tmp_path_factory.mktemp("whisper-card")
    make_seq2seq("whisper", CASES["whisper"], root / "hf")
    found = []
    for ep in ("default", "cpu"):
        path = build(str(root / "hf"), ep=ep, progress=False)
        found.append(VariantInfo.from_package(path.save(root / ep, progress=False), None))
    return found


def test_card_of_a_whisper_export(variants):
    source = SourceInfo("acme/tiny-whisper", SHA, "whisper")
    card = render(source, variants, mode="repo", command="mobius convert x", repo_id="me/asr")
    graphs = "`onnx/encoder_model.onnx`<br>`onnx/decoder_model_merged.onnx`<br>"
    assert f"| {graphs}`onnx/default-f32/encoder.onnx`<br>`onnx/default-f32/decoder.onnx` |" in card
    assert "`onnx/cpu-f32/encoder_model.onnx`<br>" in card
    python = re.findall(r"```python\n(.*?)```", card, re.S)
    for block in python:
        compile(block, "<card>", "exec")
    assert 'ORTModelForSpeechSeq2Seq.from_pretrained("me/asr", subfolder="onnx")' in python[0]
    assert "ORTModelForCTC" not in card
    assert any("og.Audios.open" in block for block in python)

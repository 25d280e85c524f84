"""Transformers.js' automatic-speech-recognition pipeline runs the Whisper export unchanged
(onnx/encoder_model.onnx and the merged decoder with its caches, its own feature extractor on
the waveform) and transcribes transformers' greedy tokens."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers

from converter import build
from tests.test_genai_whisper import SAMPLING_RATE, checkpoint  # noqa: F401 (a fixture)

NEW_TOKENS = 8


def tone(hertz: float) -> np.ndarray:
    time = np.arange(2 * SAMPLING_RATE) / SAMPLING_RATE
    return (0.3 * np.sin(2 * np.pi * hertz * time)).astype(np.float32)


@pytest.fixture(scope="module")
def export(checkpoint, tmp_path_factory):  # noqa: F811
    models = tmp_path_factory.mktemp("js-whisper")
    build(str(checkpoint[0]), progress=False).save(models / "f32", progress=False)
    # its pipeline decodes with a WhisperTokenizer's ASR decoding: the tiny BPE named so
    settings = models / "f32" / "tokenizer_config.json"
    config = json.loads(settings.read_text())
    settings.write_text(json.dumps({**config, "tokenizer_class": "WhisperTokenizer"}))
    return models


def _transcribe(folder, model, words, samples: np.ndarray) -> str:
    extractor = transformers.WhisperFeatureExtractor.from_pretrained(folder)
    features = extractor(samples, sampling_rate=SAMPLING_RATE, return_tensors="pt").input_features
    ids = torch.tensor([[model.generation_config.decoder_start_token_id]])
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            logits = model(input_features=features, decoder_input_ids=ids).logits
            ids = torch.cat([ids, logits[:, -1:].argmax(-1)], dim=1)
    return words.decode(ids[0], skip_special_tokens=True)


def test_pipeline_transcribes_transformers_tokens(transformers_js, checkpoint, export):  # noqa: F811
    folder, model, words = checkpoint
    sounds = [tone(330), tone(2000)]
    expected = [_transcribe(folder, model, words, samples) for samples in sounds]
    assert expected[0] != expected[1]  # what the audio says matters
    request = {"models": str(export), "model": "f32", "task": "automatic-speech-recognition"}
    options = {"max_new_tokens": NEW_TOKENS}
    calls = [{"audio": samples.tolist(), "options": options} for samples in sounds]
    answers = transformers_js.run({**request, "calls": calls})
    assert [answer["text"] for answer in answers] == expected

"""Optimum's ORTModelForSpeechSeq2Seq (transformers 4.57, its own venv: tests/legacy_clients)
loads mobius's Whisper export unchanged, its encoder and merged decoder, and gives the torch
model's logits for teacher-forced tokens: the first three without a cache, then one per call
with the past it returned."""

from pathlib import Path

import numpy as np

from tests.parity.seq2seq_cases.whisper import WHISPER_SIZES
from tests.test_legacy_clients import add_mobius_onnx

FIRST = 3


def test_optimum_speech_seq2seq_matches_torch(legacy_clients, tmp_path):
    folder = tmp_path / "tiny-whisper"
    legacy_clients("make-speech-seq2seq", folder=str(folder), config=WHISPER_SIZES)
    add_mobius_onnx(folder, "automatic-speech-recognition")
    rng = np.random.default_rng(0)
    shape = (2, WHISPER_SIZES["num_mel_bins"], 2 * WHISPER_SIZES["max_source_positions"])
    features = rng.standard_normal(shape).astype(np.float32)
    ids = rng.integers(3, WHISPER_SIZES["vocab_size"], size=(2, 6))
    ids[:, 0] = WHISPER_SIZES["decoder_start_token_id"]
    result = legacy_clients(
        "optimum-speech-seq2seq",
        folder=str(folder),
        features=features.tolist(),
        decoder_ids=ids.tolist(),
        first=FIRST,
    )
    onnx = folder / "onnx"
    opened = [Path(f) for f in result["onnx_files"]]
    assert opened == [
        (onnx / n).resolve() for n in ("encoder_model.onnx", "decoder_model_merged.onnx")
    ]
    assert result["merged"]
    assert np.abs(np.array(result["onnx"]) - np.array(result["torch"])).max() <= 1e-4

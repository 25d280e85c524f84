"""A tiny Whisper package runs in onnxruntime-genai 0.18 unchanged (its "whisper" type, the
encoder.onnx / decoder.onnx pair) and generates exactly transformers' greedy tokens: from a
fixed log-mel batch of two, and from a waveform through genai's own audio processor."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import onnxruntime as ort
import onnxruntime_genai as og
import pytest
import tokenizers
import torch
import transformers

from converter import build
from converter.tasks.genai_speech import DECODER_FILE, ENCODER_FILE, FRAMES
from model_cards.layout import hub_paths
from tests.checkpoints import TINY_LLAMA

SAMPLING_RATE = 16000
NEW_TOKENS = 12
MELS = 80  # genai's processor builds the filterbank of this many bins, as transformers does
SPECIAL = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]
PROMPT = "".join(SPECIAL[1:])
FILES = (ENCODER_FILE, DECODER_FILE)
# genai feeds 3000 frames: 1500 encoder positions
CONFIG = {
    "num_mel_bins": MELS,
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 96,
    "decoder_ffn_dim": 96,
    "max_source_positions": FRAMES // 2,
    "max_target_positions": 32,
}


def tokenizer() -> transformers.PreTrainedTokenizerFast:
    """The tiny Llama's byte-level BPE with Whisper's special tokens added after it."""
    words = tokenizers.Tokenizer.from_file(str(TINY_LLAMA / "tokenizer.json"))
    words.add_special_tokens([tokenizers.AddedToken(t, special=True) for t in SPECIAL])
    end = SPECIAL[0]
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=words, bos_token=end, eos_token=end, pad_token=end
    )


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-whisper")
    words = tokenizer()
    start, end = words.convert_tokens_to_ids(SPECIAL[1]), words.convert_tokens_to_ids(SPECIAL[0])
    config = transformers.WhisperConfig(
        **CONFIG,
        vocab_size=len(words),
        pad_token_id=end,
        bos_token_id=end,
        eos_token_id=end,
        decoder_start_token_id=start,
        begin_suppress_tokens=None,
    )
    torch.manual_seed(0)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():  # larger than the initializer's weights: tokens that differ by row
        for tensor in model.parameters():
            tensor.add_(torch.randn_like(tensor) * 0.2)
    model.save_pretrained(folder)
    words.save_pretrained(folder)
    transformers.WhisperFeatureExtractor(feature_size=MELS).save_pretrained(folder)
    return folder, model, words


@pytest.fixture(scope="module", params=["default", "cpu"])
def package(request, checkpoint, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp(f"whisper-{request.param}")
    build(str(checkpoint[0]), ep=request.param, progress=False).save(out, progress=False)
    return out


def _genai_greedy(package: Path, features: np.ndarray, prompt: list[int]) -> list[list[int]]:
    model = og.Model(str(package))
    params = og.GeneratorParams(model)
    batch = features.shape[0]
    params.set_search_options(
        max_length=len(prompt) + NEW_TOKENS, do_sample=False, batch_size=batch
    )
    generator = og.Generator(model, params)
    generator.set_model_input("audio_features", features)
    generator.append_tokens(np.array([prompt] * batch, dtype=np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return [list(map(int, generator.get_sequence(i)))[len(prompt) :] for i in range(batch)]


def _transformers_greedy(model, features: np.ndarray, prompt: list[int]) -> list[list[int]]:
    """Each row's argmax tokens (up to and with its end token) from transformers' logits."""
    ids = torch.tensor([prompt] * features.shape[0])
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            logits = model(input_features=torch.from_numpy(features), decoder_input_ids=ids).logits
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    end = model.config.eos_token_id
    rows = [row[len(prompt) :] for row in ids.tolist()]
    return [row[: row.index(end) + 1] if end in row else row for row in rows]


def test_genai_files_name_what_the_graphs_hold(package):
    config = json.loads((package / "genai_config.json").read_text())["model"]
    assert config["type"] == "whisper"
    assert config["encoder"]["num_hidden_layers"] == CONFIG["encoder_layers"]
    assert config["decoder"]["num_hidden_layers"] == CONFIG["decoder_layers"]
    audio = json.loads((package / "audio_processor_config.json").read_text())
    steps = [s["operation"]["type"] for s in audio["feature_extraction"]["sequence"]]
    assert steps == ["AudioDecoder", "STFTNorm", "LogMelSpectrum"]


def test_hub_layout_keeps_genai_files_in_the_variant_folder(package):
    """genai loads a folder: its graphs and files, with the tokenizer, in onnx/<ep>-f32/;
    Optimum's and Transformers.js' graphs flat under onnx/ for the default EP, and the shared
    files also at the root of an export repo (a PR leaves the source's own there)."""
    manifest = json.loads((package / "mobius.json").read_text())
    folder = f"onnx/{manifest['ep']}-f32"
    optimum = "onnx/" if manifest["ep"] == "default" else f"{folder}/"
    assert hub_paths(manifest, "decoder.onnx", "pr") == [f"{folder}/decoder.onnx"]
    assert hub_paths(manifest, "genai_config.json", "repo") == [f"{folder}/genai_config.json"]
    assert hub_paths(manifest, "tokenizer.json", "pr") == [f"{folder}/tokenizer.json"]
    both = [f"{folder}/tokenizer.json", "tokenizer.json"]
    assert hub_paths(manifest, "tokenizer.json", "repo") == both
    graph = "onnx/encoder_model.onnx"
    assert hub_paths(manifest, graph, "pr") == [f"{optimum}encoder_model.onnx"]


def test_genai_graphs_match_transformers(package, checkpoint):
    """encoder.onnx's hidden states and cross caches, then decoder.onnx's logits over both
    caches (three tokens from an empty self cache, then one per step), as genai runs them."""
    _, model, words = checkpoint
    features = np.random.default_rng(4).standard_normal((2, MELS, FRAMES)).astype(np.float32)
    ids = np.random.default_rng(5).integers(0, len(words), size=(2, 6))
    with torch.no_grad():
        hidden = model.get_encoder()(torch.from_numpy(features)).last_hidden_state.numpy()
        tensors = {"input_features": torch.from_numpy(features)}
        logits = model(**tensors, decoder_input_ids=torch.from_numpy(ids)).logits.numpy()
    encoder, decoder = (ort.InferenceSession(str(package / f)) for f in FILES)
    outputs = encoder.run(None, {"audio_features": features})
    assert np.abs(outputs[0] - hidden).max() <= 1e-4
    names = [o.name.replace("present", "past") for o in encoder.get_outputs()[1:]]
    cross = dict(zip(names, outputs[1:], strict=True))
    heads = CONFIG["decoder_attention_heads"]
    size = CONFIG["d_model"] // heads
    past = {
        f"past_{kind}_self_{i}": np.zeros((2, heads, 0, size), np.float32)
        for i in range(CONFIG["decoder_layers"])
        for kind in ("key", "value")
    }
    presents = [o.name.replace("present", "past") for o in decoder.get_outputs()[1:]]
    for start, end in ((0, 3), (3, 4), (4, 5), (5, 6)):
        step, *kept = decoder.run(None, {"input_ids": ids[:, start:end], **past, **cross})
        assert np.abs(step - logits[:, start:end]).max() <= 1e-4, start
        past = dict(zip(presents, kept, strict=True))


def test_genai_greedy_from_log_mel_equals_transformers(package, checkpoint):
    _, model, words = checkpoint
    features = np.random.default_rng(1).standard_normal((2, MELS, FRAMES)).astype(np.float32)
    prompt = words.convert_tokens_to_ids(SPECIAL[1:])
    expected = _transformers_greedy(model, features, prompt)
    assert expected[0] != expected[1]  # the rows' audio matters
    assert _genai_greedy(package, features, prompt) == expected


def _write_wav(path: Path, samples: np.ndarray) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLING_RATE)
        out.writeframes((samples * 32767).astype("<i2").tobytes())


def test_genai_audio_processor_feeds_transformers_features(package, checkpoint, tmp_path):
    """genai's processor turns a waveform and the prompt into Whisper's inputs: its log-mel
    spectrogram is transformers' inside the audio (not at the first two frames and the two
    where the audio ends, whose STFT windows it pads otherwise, nor quite at the floor that
    fills the rest of the 30 s: it takes the loudest frame among its own). Generation from its
    inputs is transformers' greedy."""
    _, model, words = checkpoint
    time = np.arange(2 * SAMPLING_RATE) / SAMPLING_RATE
    noise = np.random.default_rng(2).standard_normal(time.size)
    samples = 0.3 * np.sin(2 * np.pi * 440 * time) * np.exp(-time) + 0.05 * noise
    wav = tmp_path / "tone.wav"
    _write_wav(wav, samples)
    processor = og.Model(str(package)).create_multimodal_processor()
    inputs = processor([PROMPT], audios=og.Audios.open(str(wav)))
    prompt = inputs["input_ids"].as_numpy()[0].tolist()
    assert prompt == words.convert_tokens_to_ids(SPECIAL[1:])
    features = inputs["audio_features"].as_numpy()
    heard = np.frombuffer(wav.read_bytes()[44:], "<i2").astype(np.float32) / 32768
    extractor = transformers.WhisperFeatureExtractor(feature_size=MELS)
    reference = extractor(heard, sampling_rate=SAMPLING_RATE, return_tensors="np").input_features
    inside = slice(2, 200)  # 2 s of audio: 200 frames
    assert np.abs(features - reference)[..., inside].max() < 1e-4
    assert np.abs(features - reference)[..., 202:].max() < 1e-2
    assert _genai_greedy(package, features, prompt) == _transformers_greedy(model, features, prompt)

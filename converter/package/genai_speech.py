"""What onnxruntime-genai reads beside a speech package's encoder.onnx and decoder.onnx
(converter/tasks/genai_speech.py): genai_config.json with its "whisper" model type and
audio_processor_config.json, the log-mel steps its audio processor runs.

genai 0.18 refuses keys it does not know, so only the fields it reads are written. It sizes the
cross-attention caches from the decoder section (num_hidden_layers, num_attention_heads,
head_size) and the encoder output from the encoder section's hidden_size. Its processor
(onnxruntime-extensions) decodes the audio at 16 kHz, then STFTNorm (a Hann window) and
LogMelSpectrum, which pads or cuts to chunk_size seconds and scales as Whisper's feature
extractor does; only the sizes are settings.
"""

from __future__ import annotations

from typing import Any

from converter.errors import ConfigError
from converter.tasks.genai_speech import FRAMES

AUDIO_PROCESSOR_CONFIG = "audio_processor_config.json"
SAMPLING_RATE = 16000  # the rate onnxruntime-extensions' LogMelSpectrum assumes
_SEARCH_KEYS = ("do_sample", "temperature", "top_k", "top_p", "repetition_penalty")
_SESSION = {"log_id": "onnxruntime-genai", "provider_options": []}


def whisper_genai_config(package, generation: dict[str, Any]) -> dict[str, Any]:
    """The config of a speech package (a ModelPackage holding the genai components), with
    `generation` (generation_config.json)."""
    cfg = package.config
    roles = {c.role: c for c in package.components}
    encoder, decoder = roles["genai-encoder"], roles["genai-decoder"]
    eos = generation.get("eos_token_id", cfg.eos_token_id)
    eos = eos[0] if isinstance(eos, list) and len(eos) == 1 else eos
    pad = generation.get("pad_token_id", cfg.pad_token_id)
    start = generation.get("decoder_start_token_id", cfg.decoder_start_token_id)
    search = {"max_length": cfg.max_positions, "num_beams": 1, "do_sample": False}
    search.update({k: generation[k] for k in _SEARCH_KEYS if generation.get(k) is not None})
    return {
        "model": {
            "type": "whisper",
            "bos_token_id": start,
            "decoder_start_token_id": start,
            "eos_token_id": eos,
            "pad_token_id": pad if pad is not None else eos,
            "vocab_size": cfg.vocab_size,
            "context_length": cfg.max_positions,
            "encoder": {
                "filename": encoder.filename,
                "session_options": _SESSION,
                **_sizes(cfg, cfg.encoder_heads, cfg.encoder_kv_heads, cfg.encoder_layers),
                **encoder.io,
            },
            "decoder": {
                "filename": decoder.filename,
                "session_options": _SESSION,
                **_sizes(cfg, cfg.decoder_heads, cfg.decoder_kv_heads, cfg.decoder_layers),
                **decoder.io,
            },
        },
        # the standard Attention and MultiHeadAttention concatenate the past: no shared buffer
        "search": {"past_present_share_buffer": False, **search},
    }


def _sizes(cfg, heads: int, kv_heads: int, layers: int) -> dict[str, int]:
    return {
        "head_size": cfg.head_dim,
        "hidden_size": cfg.d_model,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "num_hidden_layers": layers,
    }


def audio_processor_config(preprocessor: dict[str, Any], num_mel_bins: int) -> dict[str, Any]:
    """genai's log-mel steps from the model's preprocessor_config.json (WhisperFeatureExtractor's
    keys; Whisper's defaults where the file is missing)."""
    rate = preprocessor.get("sampling_rate", SAMPLING_RATE)
    hop = preprocessor.get("hop_length", 160)
    n_fft = preprocessor.get("n_fft", 400)
    seconds = preprocessor.get("chunk_length", 30)
    mels = preprocessor.get("feature_size", num_mel_bins)
    if rate != SAMPLING_RATE:
        raise ConfigError(
            f"preprocessor_config.json 'sampling_rate' = {rate!r}: onnxruntime-genai's audio "
            f"processor computes log-mel spectrograms of {SAMPLING_RATE} Hz audio only"
        )
    if not all(isinstance(v, int) and v > 0 for v in (hop, n_fft, seconds, mels)):
        raise ConfigError(
            "preprocessor_config.json's hop_length, n_fft, chunk_length and feature_size must "
            "be positive integers"
        )
    if seconds * rate // hop != FRAMES:
        raise ConfigError(
            f"preprocessor_config.json makes {seconds} s / {hop}-sample hops = "
            f"{seconds * rate // hop} frames; onnxruntime-genai's whisper feeds {FRAMES}"
        )
    if mels != num_mel_bins:
        raise ConfigError(
            f"preprocessor_config.json 'feature_size' = {mels} but the encoder reads "
            f"'num_mel_bins' = {num_mel_bins}"
        )
    stft = {"n_fft": n_fft, "frame_length": n_fft, "hop_length": hop}
    log_mel = {"chunk_size": seconds, "hop_length": hop, "n_fft": n_fft, "n_mel": mels}
    steps = [
        ("audio_decoder", "AudioDecoder", None),
        ("STFT", "STFTNorm", stft),
        ("log_mel_spectrogram", "LogMelSpectrum", log_mel),
    ]
    sequence = [
        {"operation": {"name": name, "type": kind, **({"attrs": attrs} if attrs else {})}}
        for name, kind, attrs in steps
    ]
    return {"feature_extraction": {"sequence": sequence}}

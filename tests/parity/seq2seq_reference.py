"""transformers encoder-decoders on tiny random weights, and the inputs both sides are fed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers

from converter.validate.reference_fixes import corrected
from tests.parity.seq2seq_cases import Seq2SeqCase

BATCH, SOURCE, TARGET = 2, 9, 6
# the second source row is padded after 5 tokens
SOURCE_MASK = np.array([[1] * SOURCE, [1] * 5 + [0] * (SOURCE - 5)])


def make_seq2seq(case_id: str, case: Seq2SeqCase, folder: Path):
    """A random `case.model_class` model for `case`, saved to `folder` (weights and buffers
    such as final_logits_bias noised, so biases and norms are not trivial) and loaded back from
    it: what the checkpoint leaves out (Marian's and M2M-100's sinusoid tables) transformers
    computes again, as it does for a real checkpoint."""
    config = transformers.AutoConfig.for_model(**case.config)
    for key, value in case.overrides.items():
        setattr(config, key, value)
    config._attn_implementation = "eager"
    torch.manual_seed(sum(map(ord, case_id)))
    model = getattr(transformers, case.model_class).from_config(config)
    saved = model.state_dict(keep_vars=True).values()
    with torch.no_grad():
        for tensor in saved:
            if tensor.is_floating_point():
                tensor.add_(torch.randn_like(tensor) * 0.05)
    model.save_pretrained(folder)
    loaded = getattr(transformers, case.model_class).from_pretrained(
        folder, attn_implementation="eager"
    )
    return corrected(loaded).eval()


def case_rng(case_id: str) -> np.random.Generator:
    """The random source of one case's inputs: its own, so adding a case changes no other's."""
    return np.random.default_rng(sum(map(ord, case_id)))


def case_inputs(case_id: str, case: Seq2SeqCase, model) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(the encoder's feeds, the teacher-forced decoder ids) of `case`, from its own source."""
    rng = case_rng(case_id)
    return INPUTS[case.inputs](case.config, rng), decoder_ids(model, rng)


def source_vocab(config: dict) -> int:
    """The encoder's vocabulary size: FSMT names it src_vocab_size, a composed model's
    `encoder` section has its own."""
    vocab = config.get("src_vocab_size", config.get("vocab_size"))
    return config["encoder"]["vocab_size"] if vocab is None else vocab


def text_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two source sentences, the second padded with the pad token after 5 tokens."""
    ids = rng.integers(3, source_vocab(config), size=(BATCH, SOURCE))
    ids = np.where(SOURCE_MASK == 1, ids, config.get("pad_token_id", 0))
    return {"input_ids": ids, "attention_mask": SOURCE_MASK}


def left_padded_text_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The two sentences padded on the left: positions counted over the real tokens only
    (M2M-100's, FSMT's) start after the padding."""
    return {name: value[:, ::-1].copy() for name, value in text_inputs(config, rng).items()}


def log_mel_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two random log-mel spectrograms of Whisper's fixed length (2 x max_source_positions)."""
    shape = (BATCH, config["num_mel_bins"], 2 * config["max_source_positions"])
    return {"input_features": rng.standard_normal(shape).astype(np.float32)}


def waveform_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two 16 kHz waveforms of 4000 samples, the second zero-padded after 2500."""
    values = (rng.standard_normal((BATCH, 4000)) * 0.1).astype(np.float32)
    mask = np.ones_like(values, dtype=np.int64)
    values[1, 2500:], mask[1, 2500:] = 0.0, 0
    return {"input_values": values, "attention_mask": mask}


def filter_bank_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two filter-bank sequences of 40 frames, the second zero-padded after 27."""
    shape = (BATCH, 40, config["input_feat_per_channel"] * config.get("input_channels", 1))
    features = rng.standard_normal(shape).astype(np.float32)
    mask = np.ones(shape[:2], dtype=np.int64)
    features[1, 27:], mask[1, 27:] = 0.0, 0
    return {"input_features": features, "attention_mask": mask}


# the encoder's inputs by modality; speech families add theirs (input_features, ...)
INPUTS = {
    "text": text_inputs,
    "text-left-padded": left_padded_text_inputs,
    "log-mel": log_mel_inputs,
    "waveform": waveform_inputs,
    "filter-bank": filter_bank_inputs,
}


def kept_positions(case: Seq2SeqCase, feeds: dict[str, np.ndarray]) -> np.ndarray | None:
    """[batch, encoder positions] 1 where the encoder output is compared (None: all)."""
    return feeds.get("attention_mask") if case.inputs.startswith("text") else None


def decoder_ids(model, rng: np.random.Generator) -> np.ndarray:
    """Teacher-forced decoder tokens: the decoder start token, then random ones."""
    start = model.generation_config.decoder_start_token_id
    if start is None:  # T5Gemma's config has no such attribute (its decoder starts from bos)
        start = getattr(model.config, "decoder_start_token_id", None)
    if start is None:
        start = model.config.eos_token_id
    vocab = model.config.get_text_config(decoder=True).vocab_size
    ids = rng.integers(3, vocab, size=(BATCH, TARGET))
    ids[:, 0] = start
    return ids


def reference(model, feeds: dict[str, np.ndarray], ids: np.ndarray):
    """(encoder last_hidden_state, logits of the whole teacher-forced sequence)."""
    tensors = {name: torch.from_numpy(value) for name, value in feeds.items()}
    with torch.no_grad():
        encoded = model.get_encoder()(**tensors).last_hidden_state
        # without a cache: FSMT's decoder masks nothing causally when it builds one
        decoder_ids = torch.from_numpy(ids)
        logits = model(**tensors, decoder_input_ids=decoder_ids, use_cache=False).logits
    return encoded.numpy(), logits.numpy()

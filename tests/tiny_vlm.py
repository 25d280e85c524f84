"""Side files a tiny VLM needs to run in onnxruntime-genai, made offline: a byte-level BPE
tokenizer (one token per byte, no merges) with the family's special tokens at the ids its
parity case's config names (Qwen's by default), and the image processor's settings at the tiny
tower's patch size."""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers.convert_slow_tokenizer import bytes_to_unicode

# Qwen's special tokens at tests/parity/vlm_cases/qwen2_5_vl.py's ids
SPECIALS = {
    "<|endoftext|>": 389,
    "<|image_pad|>": 390,
    "<|video_pad|>": 391,
    "<|vision_start|>": 392,
    "<|vision_end|>": 393,
}
PREPROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor",
    "patch_size": 4,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "min_pixels": 64,  # small images keep their size (a multiple of 8 pixels a side)
    "max_pixels": 4096,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "rescale_factor": 1 / 255,
}


def save_side_files(folder: Path, preprocessor: dict | None = None) -> None:
    """`preprocessor`: settings over PREPROCESSOR's."""
    save_tokenizer(folder, SPECIALS, "<|endoftext|>")
    (folder / "preprocessor_config.json").write_text(
        json.dumps({**PREPROCESSOR, **(preprocessor or {})})
    )


def save_tokenizer(folder: Path, specials: dict[str, int], end: str) -> None:
    """The byte-level tokenizer with `specials` at their ids, `end` (one of them) its eos."""
    vocab = {t: i for i, t in enumerate(sorted(set(bytes_to_unicode().values())))}
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token=end, pad_token=end
    ).save_pretrained(folder)
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text())
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    data["added_tokens"] = [
        {"id": i, "content": t, **flags, "special": True} for t, i in specials.items()
    ]
    path.write_text(json.dumps(data))
    path = folder / "tokenizer_config.json"
    settings = json.loads(path.read_text())
    settings["tokenizer_class"] = "Qwen2Tokenizer"
    settings["added_tokens_decoder"] = {
        str(i): {"content": t, **flags, "special": True} for t, i in specials.items()
    }
    path.write_text(json.dumps(settings))

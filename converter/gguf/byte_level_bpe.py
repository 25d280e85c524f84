"""The `gpt2` GGUF tokenizer: byte-level BPE with merges, pre-tokenized by `tokenizer.ggml.pre`."""

from __future__ import annotations

from typing import Any

from converter.errors import ConfigError

# How each `tokenizer.ggml.pre` splits text before the merges, as llama.cpp reads the name: the
# regexes applied in turn, each cutting the pieces the one before left. For "gpt-2", the ByteLevel
# pre-tokenizer's own regex, which is GPT-2's.
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# llama.cpp's fallback for a vocabulary that names no pre-tokenizer
_DEFAULT = (
    r"[\p{P}\$\+<=>\^~\|]+",
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
    r"\p{N}+",
    r"[0-9][0-9][0-9]",
)
SPLIT_REGEXES: dict[str, tuple[str, ...]] = {
    "default": _DEFAULT,
    "gpt-2": (),
    "llama-bpe": (_LLAMA3,),
    "llama3": (_LLAMA3,),
    "llama-v3": (_LLAMA3,),
    "qwen2": (_QWEN2,),
}
# Llama 3 takes a pre-token found whole in the vocabulary without merging it.
_IGNORE_MERGES = {"llama-bpe", "llama3", "llama-v3"}
# Qwen2's tokenizer composes text to NFC before splitting; the GGUF does not say so.
_NFC_PRE = {"qwen2"}


def byte_level_tokenizer(metadata: dict[str, Any], vocab: dict[str, int]) -> dict[str, Any]:
    """tokenizer.json's model, normalizer, pre-tokenizer and decoder for a `gpt2` vocabulary."""
    pre = metadata.get("tokenizer.ggml.pre", "default")
    if pre not in SPLIT_REGEXES:
        raise ConfigError(
            f"GGUF tokenizer.ggml.pre {pre!r} (the pre-tokenizer of a gpt2 vocabulary) is not "
            f"supported; supported: {', '.join(sorted(SPLIT_REGEXES))}"
        )
    regexes = SPLIT_REGEXES[pre]
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": False,
        "use_regex": not regexes,
    }
    splits = [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}
        for regex in regexes
    ]
    return {
        "normalizer": {"type": "NFC"} if pre in _NFC_PRE else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [*splits, byte_level]}
        if splits
        else byte_level,
        "decoder": {**byte_level, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": pre in _IGNORE_MERGES,
            "vocab": vocab,
            "merges": _merges(metadata, vocab),
        },
    }


def _merges(metadata: dict[str, Any], vocab: dict[str, int]) -> list[list[str]]:
    merges = metadata.get("tokenizer.ggml.merges")
    if merges is None:
        raise ConfigError(
            "GGUF tokenizer.ggml.merges is missing; a gpt2 vocabulary needs its merges"
        )
    pairs = []
    for merge in merges:
        parts = merge.split(" ") if isinstance(merge, str) else []
        if len(parts) != 2 or parts[0] not in vocab or parts[1] not in vocab:
            raise ConfigError(f"GGUF tokenizer.ggml.merges holds {merge!r}, not two known tokens")
        pairs.append(parts)
    return pairs

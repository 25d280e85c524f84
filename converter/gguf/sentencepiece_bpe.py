"""The `llama` GGUF tokenizer: SentencePiece BPE with scores and <0xXX> byte-fallback tokens.

Hugging Face represents it as a BPE model with byte fallback; the GGUF keeps the scores, not the
merges, so the merges are recovered from them: every way to cut a token into two tokens of the
vocabulary is a merge, ranked by the score of the token it makes (SentencePiece merges the pair
whose result scores highest).
"""

from __future__ import annotations

from typing import Any

from converter.errors import ConfigError

NORMAL, UNKNOWN = 1, 2
# Gemma's scores do not follow its merge order; the order of its tokens in the file does.
_RANKED_BY_POSITION = {"gemma", "gemma2", "gemma3"}
_SPACE = "\u2581"  # SentencePiece's visible space


def sentencepiece_tokenizer(
    metadata: dict[str, Any], vocab: dict[str, int], token_types: list[int]
) -> dict[str, Any]:
    """tokenizer.json's model, normalizer, pre-tokenizer and decoder for a `llama` vocabulary."""
    tokens = metadata["tokenizer.ggml.tokens"]
    unk_id = metadata.get("tokenizer.ggml.unknown_token_id")
    if unk_id is None and UNKNOWN in token_types:
        unk_id = token_types.index(UNKNOWN)
    prefix_space = metadata.get("tokenizer.ggml.add_space_prefix", True)
    decoder = [
        {"type": "Replace", "pattern": {"String": _SPACE}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    normalizer = {"type": "Replace", "pattern": {"String": " "}, "content": _SPACE}
    if prefix_space:
        # As SentencePiece and llama.cpp do: the space goes before all text, even text that starts
        # with one, and (llama.cpp) before each stretch of text that follows a special token.
        prepend = {"type": "Prepend", "prepend": _SPACE}
        normalizer = {"type": "Sequence", "normalizers": [prepend, normalizer]}
        decoder.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {
        "normalizer": normalizer,
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": decoder},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": tokens[unk_id] if unk_id is not None else None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": _merges_from_scores(metadata, tokens, token_types),
        },
    }


def _merges_from_scores(
    metadata: dict[str, Any], tokens: list[str], token_types: list[int]
) -> list[list[str]]:
    scores = metadata.get("tokenizer.ggml.scores")
    if not isinstance(scores, list) or len(scores) != len(tokens):
        raise ConfigError(
            "GGUF tokenizer.ggml.scores must give one score per token of a llama vocabulary"
        )
    # Only ordinary pieces merge: control, byte, unknown and user-defined tokens never do.
    mergeable = {
        token: index
        for index, (token, kind) in enumerate(zip(tokens, token_types, strict=True))
        if kind == NORMAL
    }
    by_position = metadata.get("general.architecture") in _RANKED_BY_POSITION
    ranked = []
    for token, index in mergeable.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in mergeable and right in mergeable:
                score = 0.0 if by_position else -scores[index]
                ranked.append((score, index, mergeable[left], mergeable[right]))
    ranked.sort()
    return [[tokens[left], tokens[right]] for _, _, left, right in ranked]

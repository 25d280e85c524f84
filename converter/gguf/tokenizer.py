"""A GGUF file's tokenizer metadata -> tokenizer.json and tokenizer_config.json.

GGUF keeps the vocabulary, scores or merges, token types and special token ids under llama.cpp's
`tokenizer.*` keys; this writes the Hugging Face files that transformers, `tokenizers` and
onnxruntime-genai load, encoding like the tokenizer the GGUF was made from.
"""

from __future__ import annotations

import json
from typing import Any

from converter.errors import ConfigError
from converter.gguf.byte_level_bpe import byte_level_tokenizer
from converter.gguf.sentencepiece_bpe import sentencepiece_tokenizer

# llama.cpp's token types (gguf.TokenType)
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4
SUPPORTED_MODELS = ("gpt2", "llama")
_SPECIAL_IDS = {
    "bos_token": "tokenizer.ggml.bos_token_id",
    "eos_token": "tokenizer.ggml.eos_token_id",
    "unk_token": "tokenizer.ggml.unknown_token_id",
    "pad_token": "tokenizer.ggml.padding_token_id",
}


def tokenizer_files(metadata: dict[str, Any]) -> dict[str, str]:
    """File name -> text of tokenizer.json and tokenizer_config.json for GGUF `metadata`; none
    for a file without a tokenizer (no tokenizer.ggml.model, or llama.cpp's "none")."""
    model = metadata.get("tokenizer.ggml.model", "none")
    if model == "none":
        return {}
    if model not in SUPPORTED_MODELS:
        raise ConfigError(
            f"GGUF tokenizer.ggml.model {model!r} is not supported; "
            f"supported: {', '.join(SUPPORTED_MODELS)}"
        )
    tokens = _tokens(metadata)
    token_types = _token_types(metadata, len(tokens))
    specials = _special_tokens(metadata, tokens)
    vocab: dict[str, int] = {}
    for index, token in enumerate(tokens):
        vocab.setdefault(token, index)
    if model == "gpt2":
        parts = byte_level_tokenizer(metadata, vocab)
        add_bos = metadata.get("tokenizer.ggml.add_bos_token", False)
    else:
        parts = sentencepiece_tokenizer(metadata, vocab, token_types)
        # llama.cpp adds BOS to a SentencePiece vocabulary unless the file says otherwise.
        add_bos = metadata.get("tokenizer.ggml.add_bos_token", True)
    add_eos = metadata.get("tokenizer.ggml.add_eos_token", False)
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": _added_tokens(tokens, token_types),
        "normalizer": parts["normalizer"],
        "pre_tokenizer": parts["pre_tokenizer"],
        "post_processor": _post_processor(metadata, tokens, add_bos, add_eos),
        "decoder": parts["decoder"],
        "model": parts["model"],
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "add_bos_token": add_bos,
        "add_eos_token": add_eos,
        **{name: token for name, token in specials.items() if token is not None},
        "clean_up_tokenization_spaces": False,
    }
    if isinstance(metadata.get("tokenizer.chat_template"), str):
        config["chat_template"] = metadata["tokenizer.chat_template"]
    return {
        "tokenizer.json": json.dumps(tokenizer, ensure_ascii=False, indent=2),
        "tokenizer_config.json": json.dumps(config, ensure_ascii=False, indent=2),
    }


def _tokens(metadata: dict[str, Any]) -> list[str]:
    tokens = metadata.get("tokenizer.ggml.tokens")
    if tokens is None:
        raise ConfigError("GGUF metadata has no tokenizer.ggml.tokens (the vocabulary)")
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise ConfigError("GGUF tokenizer.ggml.tokens must be a non-empty list of strings")
    return tokens


def _token_types(metadata: dict[str, Any], count: int) -> list[int]:
    types = metadata.get("tokenizer.ggml.token_type")
    if types is None:
        return [NORMAL] * count
    if not isinstance(types, list) or len(types) != count:
        raise ConfigError(
            f"GGUF tokenizer.ggml.token_type must give one type per token ({count} tokens)"
        )
    return [int(kind) for kind in types]


def _special_tokens(metadata: dict[str, Any], tokens: list[str]) -> dict[str, str | None]:
    specials = {}
    for name, key in _SPECIAL_IDS.items():
        token_id = metadata.get(key)
        if token_id is not None and not (isinstance(token_id, int) and 0 <= token_id < len(tokens)):
            raise ConfigError(f"GGUF {key} is {token_id!r}, not a token id below {len(tokens)}")
        specials[name] = tokens[token_id] if token_id is not None else None
    return specials


def _added_tokens(tokens: list[str], token_types: list[int]) -> list[dict[str, Any]]:
    """Control tokens as special added tokens, user-defined ones as plain ones: both matched whole
    in the raw text before the model sees it, as llama.cpp does."""
    return [
        {
            "id": index,
            "content": token,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": kind == CONTROL,
        }
        for index, (token, kind) in enumerate(zip(tokens, token_types, strict=True))
        if kind in (CONTROL, USER_DEFINED)
    ]


def _post_processor(
    metadata: dict[str, Any], tokens: list[str], add_bos: bool, add_eos: bool
) -> dict[str, Any] | None:
    """BOS before and EOS after each sequence, as the file's add_bos/add_eos flags ask."""
    ids = {}
    for flag, which in ((add_bos, "bos"), (add_eos, "eos")):
        if flag:
            key = f"tokenizer.ggml.{which}_token_id"
            if metadata.get(key) is None:
                raise ConfigError(
                    f"GGUF tokenizer adds a {which} token (tokenizer.ggml.add_{which}_token, "
                    f"or the llama default) but {key} is missing"
                )
            ids[which] = metadata[key]
    if not ids:
        return None

    def sequence(letter: str, type_id: int) -> list[dict[str, Any]]:
        def special(which: str) -> dict[str, Any]:
            return {"SpecialToken": {"id": tokens[ids[which]], "type_id": type_id}}

        items = [{"Sequence": {"id": letter, "type_id": type_id}}]
        if "bos" in ids:
            items.insert(0, special("bos"))
        if "eos" in ids:
            items.append(special("eos"))
        return items

    return {
        "type": "TemplateProcessing",
        "single": sequence("A", 0),
        "pair": sequence("A", 0) + sequence("B", 1),
        "special_tokens": {
            tokens[i]: {"id": tokens[i], "ids": [i], "tokens": [tokens[i]]} for i in ids.values()
        },
    }

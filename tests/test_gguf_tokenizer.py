"""GGUF tokenizer metadata -> tokenizer.json/tokenizer_config.json that encode like the original.

Each original tokenizer is made here (trained small, or examples/tiny-llama's), written into a real
GGUF file the way llama.cpp's converter writes it, read back with gguf's reader, and converted with
tokenizer_files; the result must give the original's ids and text in `tokenizers`, transformers and
onnxruntime-genai.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import onnxruntime_genai as og
import pytest
import sentencepiece
import transformers
from tokenizers import Tokenizer
from transformers.integrations.gguf.gguf_tokenizer_mapping import GGUF_PRE_TOKENIZER_SPLITS
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX as QWEN2_SPLIT

from converter.cli import main
from converter.errors import ConfigError
from converter.gguf.tokenizer import tokenizer_files
from tests.gguf_tokenizers import (
    byte_level_metadata,
    round_trip,
    sentencepiece_metadata,
    train_byte_level,
    train_sentencepiece,
)

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"
TEXTS = [
    "The river runs past the old mill.",
    "  two  spaces, a\ttab\n\nand\r\nnewlines  ",
    " leading space",
    "café, cafe\u0301, naïve, Ærøskøbing, 日本語のテキスト, Привет мир",
    "emoji 🦙🚀👩‍👩‍👧 and ✅",
    "digits 1 12 123 1234 12345 3.14159 1,000,000",
    "I've 'RE we'll don't DON'T",
    "code: def f(x):\n    return x**2  # done",
    "(river)\tbread \n\n(mill)\tsoup",
    "",
]
# The split regexes of the original tokenizers, as transformers spells them, and llama.cpp's
# sequence for a vocabulary whose pre-tokenizer is "default" (llama-vocab.cpp).
ORIGINAL_SPLITS = {
    "qwen2": (QWEN2_SPLIT,),
    "llama-bpe": (GGUF_PRE_TOKENIZER_SPLITS["llama-bpe"],),
    "default": (
        r"[\p{P}\$\+<=>\^~\|]+",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
        r"\p{N}+",
        r"[0-9][0-9][0-9]",
    ),
}
CHAT = [{"role": "user", "content": "Is the river wide?"}, {"role": "assistant", "content": "Yes."}]


def _write(files: dict[str, str], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def genai_package(tmp_path_factory) -> Path:
    """The tiny Llama as a genai package: og.Tokenizer needs a model beside the tokenizer."""
    out = tmp_path_factory.mktemp("tiny-llama-genai")
    assert main(["build", "--model", str(TINY_LLAMA), "--output", str(out), "--no-progress"]) == 0
    return out


def _genai_tokenizer(package: Path, files: dict[str, str], folder: Path) -> og.Tokenizer:
    shutil.copytree(package, folder)
    (folder / "special_tokens_map.json").unlink(missing_ok=True)
    _write(files, folder)
    return og.Tokenizer(og.Model(str(folder)))


@pytest.fixture(scope="module", params=sorted(ORIGINAL_SPLITS))
def byte_level(request, tmp_path_factory):
    """(pre, original transformers tokenizer, converted folder) for a trained byte-level BPE."""
    folder = tmp_path_factory.mktemp(f"bpe-{request.param}")
    pre = request.param
    original = train_byte_level(
        folder / "original",
        ORIGINAL_SPLITS[pre],
        nfc=pre == "qwen2",
        ignore_merges=pre == "llama-bpe",
    )
    reference = transformers.AutoTokenizer.from_pretrained(original)
    # Three ids past the tokenizer, like a model whose embedding rows are padded.
    metadata = byte_level_metadata(original, pre, vocab_size=len(reference) + 3)
    files = tokenizer_files(round_trip(metadata, folder / "model.gguf"))
    return pre, reference, files, _write(files, folder / "converted")


def _words_only_ignore_merges_reaches(tokenizer_json: str) -> list[str]:
    """Vocabulary entries that encode differently once merges are no longer skipped."""
    original = Tokenizer.from_str(tokenizer_json)
    data = json.loads(tokenizer_json)
    data["model"]["ignore_merges"] = False
    merging = Tokenizer.from_str(json.dumps(data))
    words = [original.decode([index]) for index in range(original.get_vocab_size())]
    return [w for w in words if original.encode(w).ids != merging.encode(w).ids]


def test_byte_level_encodes_and_decodes_like_the_original(byte_level):
    pre, reference, files, converted = byte_level
    ours = transformers.AutoTokenizer.from_pretrained(converted)
    backend = Tokenizer.from_str(files["tokenizer.json"])
    original_json = (Path(reference.name_or_path) / "tokenizer.json").read_text()
    whole_words = _words_only_ignore_merges_reaches(original_json)
    assert len(whole_words) == (pre == "llama-bpe")
    texts = [*TEXTS, *whole_words, "<|im_start|>user\nhi<|im_end|>\n<think>hmm</think><|end|>"]
    for text in texts:
        expected = reference(text)["input_ids"]
        assert ours(text)["input_ids"] == expected, text
        assert backend.encode(text).ids == expected, text
        assert ours.decode(expected) == reference.decode(expected)
        assert ours.decode(expected, skip_special_tokens=True) == reference.decode(
            expected, skip_special_tokens=True
        )


def test_byte_level_special_tokens_and_chat_template(byte_level):
    _, reference, files, converted = byte_level
    ours = transformers.AutoTokenizer.from_pretrained(converted)
    config = json.loads(files["tokenizer_config.json"])
    assert config["add_bos_token"] is True
    assert (config["bos_token"], config["eos_token"], config["pad_token"]) == (
        "<|begin|>",
        "<|im_end|>",
        "<|end|>",
    )
    assert ours.pad_token_id == reference.pad_token_id
    assert ours.apply_chat_template(CHAT, tokenize=False) == reference.apply_chat_template(
        CHAT, tokenize=False
    )
    added = {
        t["content"]: t["special"] for t in json.loads(files["tokenizer.json"])["added_tokens"]
    }
    assert added["<|im_start|>"] is True and added["<think>"] is False


def test_byte_level_genai_encodes_like_the_original(byte_level, genai_package, tmp_path):
    """genai on the converted files = genai on the original ones (genai skips NFC, for both)."""
    pre, reference, files, _ = byte_level
    if pre == "default":
        # genai's regex engine knows \p{..} only inside the split regexes it recognises, so it
        # loads neither this file nor the original: the limit docs/build-features.md states.
        with pytest.raises(RuntimeError, match=r"Invalid regex"):
            _genai_tokenizer(genai_package, files, tmp_path / "converted")
        return
    original_files = {
        name: (Path(reference.name_or_path) / name).read_text()
        for name in ("tokenizer.json", "tokenizer_config.json")
    }
    ours = _genai_tokenizer(genai_package, files, tmp_path / "converted")
    original = _genai_tokenizer(genai_package, original_files, tmp_path / "original")
    for text in TEXTS[:-1]:
        expected = list(original.encode(text))
        assert list(ours.encode(text)) == expected, text
        assert ours.decode(expected) == original.decode(expected)
    plain = TEXTS[0]
    assert list(ours.encode(plain)) == reference(plain, add_special_tokens=False)["input_ids"]


def test_tiny_llama_tokenizer_survives_gguf(tmp_path, genai_package):
    """examples/tiny-llama's tokenizer (GPT-2's split regex) -> GGUF -> the same ids and config."""
    reference = transformers.AutoTokenizer.from_pretrained(TINY_LLAMA)
    metadata = byte_level_metadata(TINY_LLAMA, "gpt-2")
    files = tokenizer_files(round_trip(metadata, tmp_path / "tiny.gguf"))
    ours = transformers.AutoTokenizer.from_pretrained(_write(files, tmp_path / "converted"))
    genai = _genai_tokenizer(genai_package, files, tmp_path / "package")
    for text in [*TEXTS, "<|user|>\nhello<|end|>\n<|assistant|>\n"]:
        assert ours(text)["input_ids"] == reference(text)["input_ids"], text
        expected = reference(text, add_special_tokens=False)["input_ids"]
        assert list(genai.encode(text)) == expected, text
    original = json.loads((TINY_LLAMA / "tokenizer_config.json").read_text())
    config = json.loads(files["tokenizer_config.json"])
    for key in ("bos_token", "eos_token", "pad_token", "add_bos_token", "chat_template"):
        assert config[key] == original[key], key
    assert ours.apply_chat_template(CHAT, tokenize=True) == reference.apply_chat_template(
        CHAT, tokenize=True
    )


@pytest.fixture(scope="module")
def sentencepiece_model(tmp_path_factory) -> Path:
    return train_sentencepiece(tmp_path_factory.mktemp("spm"), dummy_prefix=True)


def _sentencepiece_files(model_file: Path, gguf_path: Path, **changes) -> dict[str, str]:
    """The model's files through a GGUF whose metadata has `changes` (None: key left out)."""
    metadata = {**sentencepiece_metadata(model_file), **changes}
    kept = {key: value for key, value in metadata.items() if value is not None}
    return tokenizer_files(round_trip(kept, gguf_path))


def test_sentencepiece_encodes_and_decodes_like_sentencepiece(sentencepiece_model, tmp_path):
    processor = sentencepiece.SentencePieceProcessor(model_file=str(sentencepiece_model))
    files = _sentencepiece_files(sentencepiece_model, tmp_path / "spm.gguf")
    ours = transformers.AutoTokenizer.from_pretrained(_write(files, tmp_path / "converted"))
    backend = Tokenizer.from_str(files["tokenizer.json"])
    bos, eos, user = 1, 2, processor.piece_to_id("<|user|>")
    assert any(processor.is_byte(i) for i in ours("日本語 🦙")["input_ids"])  # byte fallback used
    for text in TEXTS:
        expected = [bos, *processor.encode(text)]
        assert ours(text)["input_ids"] == expected, text
        assert backend.encode(text).ids == expected, text
        assert ours.decode(expected, skip_special_tokens=True) == processor.decode(expected)
    # llama.cpp's rule: special tokens are matched whole and the text after one gets the space.
    text = "<|user|>Is it wide?</s>Yes"
    expected = [bos, user, *processor.encode("Is it wide?"), eos, *processor.encode("Yes")]
    assert ours(text)["input_ids"] == expected
    config = json.loads(files["tokenizer_config.json"])
    assert (config["bos_token"], config["eos_token"], config["unk_token"]) == (
        "<s>",
        "</s>",
        "<unk>",
    )
    assert config["add_bos_token"] is True and "chat_template" not in config


def test_merges_follow_the_scores_not_the_file_order(sentencepiece_model, tmp_path):
    """The ordinary pieces listed in reverse, each with its score: the same pieces come out."""
    processor = sentencepiece.SentencePieceProcessor(model_file=str(sentencepiece_model))
    metadata = sentencepiece_metadata(sentencepiece_model)
    ordinary = [i for i, kind in enumerate(metadata["tokenizer.ggml.token_type"]) if kind == 1]
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores"):
        values = metadata[key]
        for index, value in zip(ordinary, [values[i] for i in reversed(ordinary)], strict=True):
            values[index] = value
    files = tokenizer_files(round_trip(metadata, tmp_path / "reversed.gguf"))
    ours = transformers.AutoTokenizer.from_pretrained(_write(files, tmp_path / "converted"))
    for text in TEXTS:
        ids = ours(text, add_special_tokens=False)["input_ids"]
        assert ours.convert_ids_to_tokens(ids) == processor.encode(text, out_type=str), text


def test_sentencepiece_genai_encodes_like_sentencepiece(
    sentencepiece_model, genai_package, tmp_path
):
    processor = sentencepiece.SentencePieceProcessor(model_file=str(sentencepiece_model))
    files = _sentencepiece_files(sentencepiece_model, tmp_path / "spm.gguf")
    tokenizer = _genai_tokenizer(genai_package, files, tmp_path / "package")
    # genai cuts SentencePiece text at each space before merging, so it never forms the pieces
    # of two or more spaces ("▁▁▁▁") that SentencePiece does: texts with runs of blanks differ.
    single_spaced = [text for text in TEXTS[:-1] if not re.search(r"\s\s", text)]
    assert len(single_spaced) == 6
    for text in single_spaced:
        assert list(tokenizer.encode(text)) == processor.encode(text), text


def test_gemma_style_vocabulary_without_space_prefix_ranks_merges_by_position(tmp_path):
    """Gemma: no space prefix, runs of spaces as user-defined pieces, and scores that say nothing
    of the merge order (here shuffled)."""
    blanks = ("\u2581\u2581", "\u2581\u2581\u2581\u2581")
    model_file = train_sentencepiece(tmp_path, dummy_prefix=False, blanks=blanks)
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    metadata = sentencepiece_metadata(model_file, architecture="gemma2", added=blanks)
    assert "  " in metadata["tokenizer.ggml.tokens"]
    assert processor.piece_to_id(blanks[1]) in processor.encode(TEXTS[7])  # the code's indent
    random.Random(0).shuffle(metadata["tokenizer.ggml.scores"])
    metadata["tokenizer.ggml.add_space_prefix"] = False
    files = tokenizer_files(round_trip(metadata, tmp_path / "gemma.gguf"))
    ours = transformers.AutoTokenizer.from_pretrained(_write(files, tmp_path / "converted"))
    for text in TEXTS:
        expected = [1, *processor.encode(text)]
        assert ours(text)["input_ids"] == expected, text
        assert ours.decode(expected, skip_special_tokens=True) == processor.decode(expected)


def test_add_eos_and_chat_template_come_from_the_file(sentencepiece_model, tmp_path):
    template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    files = _sentencepiece_files(
        sentencepiece_model,
        tmp_path / "spm.gguf",
        **{"tokenizer.ggml.add_bos_token": False, "tokenizer.ggml.add_eos_token": True},
        **{"tokenizer.chat_template": template, "tokenizer.ggml.padding_token_id": 0},
        **{"tokenizer.ggml.unknown_token_id": None},
    )
    ours = transformers.AutoTokenizer.from_pretrained(_write(files, tmp_path / "converted"))
    ids = ours("river")["input_ids"]
    assert ids[0] != 1 and ids[-1] == 2
    config = json.loads(files["tokenizer_config.json"])
    assert config["chat_template"] == template and config["pad_token"] == "<unk>"
    # no unknown_token_id: the token typed unknown is the model's
    assert json.loads(files["tokenizer.json"])["model"]["unk_token"] == "<unk>"
    assert ours.apply_chat_template(CHAT, tokenize=False) == "Is the river wide?Yes."


def _minimal(model: str = "gpt2", **changes) -> dict:
    metadata = {
        "general.architecture": "llama",
        "tokenizer.ggml.model": model,
        "tokenizer.ggml.pre": "qwen2",
        "tokenizer.ggml.tokens": ["a", "b", "ab", "<s>"],
        "tokenizer.ggml.token_type": [1, 1, 1, 3],
        "tokenizer.ggml.scores": [0.0, 0.0, -1.0, 0.0],
        "tokenizer.ggml.merges": ["a b"],
        "tokenizer.ggml.bos_token_id": 3,
    }
    metadata.update(changes)
    return {key: value for key, value in metadata.items() if value is not None}


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (_minimal("bert"), "tokenizer.ggml.model 'bert' is not supported"),
        (_minimal("t5"), "tokenizer.ggml.model 't5' is not supported"),
        (_minimal(**{"tokenizer.ggml.tokens": None}), "no tokenizer.ggml.tokens"),
        (_minimal(**{"tokenizer.ggml.pre": "falcon"}), "tokenizer.ggml.pre 'falcon'"),
        (_minimal(**{"tokenizer.ggml.merges": None}), "tokenizer.ggml.merges is missing"),
        (_minimal(**{"tokenizer.ggml.merges": ["a c"]}), "holds 'a c'"),
        (_minimal("llama", **{"tokenizer.ggml.scores": None}), "tokenizer.ggml.scores"),
        (_minimal(**{"tokenizer.ggml.token_type": [1]}), "tokenizer.ggml.token_type"),
        (_minimal(**{"tokenizer.ggml.bos_token_id": 9}), "tokenizer.ggml.bos_token_id is 9"),
        (
            _minimal(**{"tokenizer.ggml.add_eos_token": True}),
            "tokenizer.ggml.eos_token_id is missing",
        ),
        (
            _minimal("llama", **{"tokenizer.ggml.bos_token_id": None}),
            "adds a bos token .* but tokenizer.ggml.bos_token_id is missing",
        ),
    ],
)
def test_bad_metadata_is_refused_by_name(metadata, message):
    with pytest.raises(ConfigError, match=message):
        tokenizer_files(metadata)


def test_a_file_without_a_tokenizer_gives_no_files():
    assert tokenizer_files(_minimal(**{"tokenizer.ggml.model": None})) == {}
    assert tokenizer_files(_minimal("none")) == {}

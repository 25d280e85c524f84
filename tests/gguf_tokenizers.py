"""Tokenizers written into GGUF metadata the way llama.cpp's converter writes them, and read back.

Facts followed (llama.cpp convert_hf_to_gguf.py and gguf-py's vocab.py): a byte-level vocabulary
keeps its tokens as tokenizer.json spells them, with added tokens in plain text, CONTROL when
special and USER_DEFINED otherwise, and its merges as "left right"; a SentencePiece vocabulary
keeps each piece with its score and type (control, unknown, unused, byte). Missing ids up to the
model's vocab_size become "[PAD{i}]" UNUSED tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import transformers

CONTROL, USER_DEFINED, UNUSED = 3, 4, 5


def byte_level_metadata(
    folder: Path, pre: str, vocab_size: int | None = None, architecture: str = "llama"
) -> dict[str, Any]:
    """GGUF tokenizer metadata of the byte-level BPE tokenizer saved in `folder`."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    reverse = {index: token for token, index in tokenizer.get_vocab().items()}
    added = tokenizer.added_tokens_decoder
    tokens, types = [], []
    for index in range(vocab_size or len(reverse)):
        if index not in reverse:
            tokens.append(f"[PAD{index}]")
            types.append(UNUSED)
        elif index in added:
            # llama.cpp stores added tokens as the text they stand for.
            tokens.append(tokenizer.decode([index]))
            types.append(CONTROL if added[index].special else USER_DEFINED)
        else:
            tokens.append(reverse[index])
            types.append(1)
    merges = json.loads((folder / "tokenizer.json").read_text())["model"]["merges"]
    return {
        "general.architecture": architecture,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": [" ".join(pair) for pair in merges],
        **_special_metadata(folder, tokenizer),
    }


def sentencepiece_metadata(
    model_file: Path, architecture: str = "llama", added: tuple[str, ...] = ()
) -> dict[str, Any]:
    """GGUF tokenizer metadata of a SentencePiece model file, as llama.cpp reads one; `added` are
    pieces the Hugging Face tokenizer lists as added, not special, tokens (Gemma's blanks)."""
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    tokens, scores, types = [], [], []
    for index in range(processor.vocab_size()):
        tokens.append(processor.id_to_piece(index))
        scores.append(processor.get_score(index))
        kind = 1
        if processor.is_unknown(index):
            kind = 2
        elif processor.is_control(index):
            kind = CONTROL
        elif processor.is_unused(index):
            kind = UNUSED
        elif processor.is_byte(index):
            kind = 6
        types.append(kind)
    for piece in added:
        index = processor.piece_to_id(piece)
        # llama.cpp writes them "pre-normalized", with real spaces
        tokens[index], scores[index], types[index] = piece.replace("\u2581", " "), -1000.0, 4
    return {
        "general.architecture": architecture,
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": scores,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.bos_token_id": processor.bos_id(),
        "tokenizer.ggml.eos_token_id": processor.eos_id(),
        "tokenizer.ggml.unknown_token_id": processor.unk_id(),
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_eos_token": False,
    }


def _special_metadata(folder: Path, tokenizer: Any) -> dict[str, Any]:
    config = json.loads((folder / "tokenizer_config.json").read_text())
    metadata: dict[str, Any] = {}
    for name, key in (("bos", "bos"), ("eos", "eos"), ("pad", "padding"), ("unk", "unknown")):
        token = config.get(f"{name}_token")
        if token is not None:
            metadata[f"tokenizer.ggml.{key}_token_id"] = tokenizer.convert_tokens_to_ids(token)
    # llama.cpp reads add_bos/add_eos off the post-processor: does encoding add them?
    ids = tokenizer("x")["input_ids"]
    metadata["tokenizer.ggml.add_bos_token"] = ids[0] == tokenizer.bos_token_id
    metadata["tokenizer.ggml.add_eos_token"] = ids[-1] == tokenizer.eos_token_id
    template = folder / "chat_template.jinja"  # where transformers 5 saves it
    if "chat_template" in config or template.exists():
        metadata["tokenizer.chat_template"] = config.get("chat_template") or template.read_text()
    return metadata


def add_fields(writer: gguf.GGUFWriter, metadata: dict[str, Any]) -> None:
    """Write `metadata`'s keys (but the architecture, which the writer holds) as GGUF fields."""
    for key, value in metadata.items():
        if key == "general.architecture":
            continue
        if isinstance(value, list) and value and isinstance(value[0], float):
            writer.add_array(key, [float(v) for v in value])
        elif isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
        else:
            writer.add_array(key, value)


def round_trip(metadata: dict[str, Any], path: Path) -> dict[str, Any]:
    """`metadata` written to a GGUF file with gguf's writer and read back as plain values."""
    writer = gguf.GGUFWriter(str(path), metadata["general.architecture"])
    add_fields(writer, metadata)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    reader = gguf.GGUFReader(str(path))
    return {
        name: field.contents()
        for name, field in reader.fields.items()
        if name.startswith(("tokenizer.", "general.architecture"))
    }


CORPUS_SOURCE = Path(__file__).parents[1] / "examples" / "make_tiny_llama.py"


def corpus() -> list[str]:
    """Lines of English prose (and some code) to train the small tokenizers on, and lines whose
    punctuation, tabs and line ends each pre-tokenizer splits its own way."""
    return CORPUS_SOURCE.read_text().splitlines() + 50 * ["(river) (mill)\tbread\tsoup \n\nrain"]


def train_byte_level(
    folder: Path, split_regexes: tuple[str, ...], nfc: bool, ignore_merges: bool
) -> Path:
    """A small byte-level BPE saved with transformers at `folder`: special tokens, a user-defined
    one, a chat template, BOS added by its post-processor like Llama 3's; `ignore_merges` takes a
    pre-token found in the vocabulary whole, as Llama 3 does."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    tokenizer = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tokenizer.normalizer = normalizers.NFC() if nfc else None
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            *(pre_tokenizers.Split(Regex(regex), behavior="isolated") for regex in split_regexes),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(corpus(), trainer)
    if ignore_merges:
        # Like Llama 3's, the vocabulary holds a word its merges do not reach: the last one's.
        data = json.loads(tokenizer.to_str())
        data["model"]["merges"].pop()
        tokenizer = Tokenizer.from_str(json.dumps(data))
    specials = ["<|begin|>", "<|end|>", "<|im_start|>", "<|im_end|>"]
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tokenizer.add_tokens([AddedToken("<think>", special=False, normalized=False)])
    bos = tokenizer.token_to_id("<|begin|>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<|begin|> $A", pair="<|begin|> $A <|begin|> $B", special_tokens=[("<|begin|>", bos)]
    )
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|begin|>",
        eos_token="<|im_end|>",
        pad_token="<|end|>",
        add_bos_token=True,
        chat_template=(
            "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
        ),
    ).save_pretrained(folder)
    return folder


def train_sentencepiece(folder: Path, dummy_prefix: bool, blanks: tuple[str, ...] = ()) -> Path:
    """A small SentencePiece BPE model with byte fallback, Llama-style (identity normalization,
    digits split, whitespace kept), a control symbol and `blanks` as user-defined pieces;
    returns the .model file."""
    import sentencepiece

    prefix = folder / "spm"
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()),
        model_prefix=str(prefix),
        vocab_size=600,
        model_type="bpe",
        byte_fallback=True,
        split_digits=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=dummy_prefix,
        allow_whitespace_only_pieces=True,
        character_coverage=1.0,
        control_symbols=["<|user|>"],
        user_defined_symbols=list(blanks),
        unk_id=0,
        bos_id=1,
        eos_id=2,
        minloglevel=2,
        num_threads=1,
    )
    return prefix.with_suffix(".model")

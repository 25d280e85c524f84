"""A tiny random BART with a byte-level BPE tokenizer (one token per byte, no merges), made
offline for the tests that run exports through their clients. Its weights are wide enough
that greedy tokens depend on the source text."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers.convert_slow_tokenizer import bytes_to_unicode

from tests.parity.seq2seq_cases.bart import BART_SIZES

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # BART's ids 0-4
TEXTS = ["the river runs", "a small boat rests by the bank"]  # the second is longer: padding


def tokenizer() -> transformers.PreTrainedTokenizerFast:
    vocab = {t: i for i, t in enumerate(SPECIALS + sorted(set(bytes_to_unicode().values())))}
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<s>",
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        mask_token="<mask>",
    )


def save_tokenizer(folder: Path) -> transformers.PreTrainedTokenizerFast:
    """`tokenizer()` saved to `folder` under a class name transformers 4 knows too
    (transformers 5 writes its own TokenizersBackend)."""
    tok = tokenizer()
    tok.save_pretrained(folder)
    path = Path(folder) / "tokenizer_config.json"
    settings = json.loads(path.read_text())
    inputs = ["input_ids", "attention_mask"]  # (else transformers 4 adds token_type_ids)
    names = {"tokenizer_class": "PreTrainedTokenizerFast", "model_input_names": inputs}
    path.write_text(json.dumps({**settings, **names}))
    return tok


def bart_config(vocab_size: int, init_std: float = 1.0) -> dict:
    """BART's parity sizes with wide weights (greedy tokens that depend on the text) and no
    forced EOS at the length limit (which clients count differently). Measured: validation's
    f32 max abs diff is 2e-5 at init_std 0.3, 3e-4 at 0.5, 5e-3 at 1.0 (the logits grow with
    the weights, and float32 rounding with them)."""
    return {
        **BART_SIZES,
        "model_type": "bart",
        "vocab_size": vocab_size,
        "init_std": init_std,
        "forced_eos_token_id": None,
    }


def tiny_bart(folder: Path, init_std: float = 1.0):
    """(model, tokenizer) saved to `folder`."""
    tok = save_tokenizer(folder)
    config = transformers.AutoConfig.for_model(**bart_config(len(tok), init_std))
    torch.manual_seed(0)
    model = transformers.AutoModelForSeq2SeqLM.from_config(config).eval()
    model.save_pretrained(folder)
    return model, tok

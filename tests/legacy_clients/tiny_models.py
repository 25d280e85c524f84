"""Tiny random BERT models in the layouts people publish, made offline (runs in the venv).

A hand-written WordPiece vocabulary stands in for a downloaded tokenizer; the weights are
random with a wide initializer_range, so that masking or position mistakes move the outputs."""

import json
import tempfile
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    BertTokenizerFast,
)

WORDS = "the a river sea boat bridge old small run to and under at night light water stone"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS.split(), "##s", "##ing", ".", ","]


def tokenizer(folder: Path) -> BertTokenizerFast:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), model_max_length=64)


def config(**extra) -> BertConfig:
    return BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=0.2,
        **extra,
    )


def sentence_transformer(folder: str, layout: str = "saved", seed: int = 0) -> dict:
    """A BERT encoder with mean pooling, saved by sentence-transformers itself (modules.json,
    sentence_bert_config.json, 1_Pooling/, config.json, model.safetensors, tokenizer files);
    layout="classic" rewrites its module configs as sentence-transformers 2-3 wrote them, the
    form most sentence-transformers repos on the Hub still carry."""
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as raw:
        BertModel(config()).save_pretrained(raw)
        tokenizer(Path(raw)).save_pretrained(raw)
        transformer = Transformer(raw)
        pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
        SentenceTransformer(modules=[transformer, pooling], device="cpu").save_pretrained(folder)
    if layout == "classic":
        _classic(Path(folder), transformer.get_embedding_dimension())
    return {"files": sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*"))}


def _classic(folder: Path, dimension: int) -> None:
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    modes = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
    pooling = {"word_embedding_dimension": dimension}
    pooling |= {f"pooling_mode_{mode}": mode == "mean_tokens" for mode in modes}
    files = {
        "modules.json": modules,
        "sentence_bert_config.json": {"max_seq_length": 64, "do_lower_case": False},
        "1_Pooling/config.json": pooling,
        "config_sentence_transformers.json": {"__version__": {"sentence_transformers": "2.2.2"}},
    }
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content, indent=2))


def classifier(folder: str, seed: int = 0) -> dict:
    """A BertForSequenceClassification with three labels and its tokenizer."""
    torch.manual_seed(seed)
    labels = {0: "river", 1: "sea", 2: "stone"}
    model = BertForSequenceClassification(
        config(id2label=labels, label2id={v: k for k, v in labels.items()})
    )
    model.save_pretrained(folder)
    with tempfile.TemporaryDirectory() as raw:
        tokenizer(Path(raw)).save_pretrained(folder)
    return {"files": sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*"))}


def seq2seq(folder: str, config: dict, seed: int = 0) -> dict:
    """A random encoder-decoder of `config` (model_type and sizes) saved by this venv's
    transformers into `folder`, beside the tokenizer the test put there."""
    torch.manual_seed(seed)
    model = AutoModelForSeq2SeqLM.from_config(AutoConfig.for_model(**config))
    model.eval().save_pretrained(folder)
    return {"files": sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*"))}


def speech_seq2seq(folder: str, config: dict, seed: int = 0) -> dict:
    """A random speech encoder-decoder (Whisper) of `config` saved by this venv's transformers
    into `folder`."""
    from transformers import AutoModelForSpeechSeq2Seq

    torch.manual_seed(seed)
    model = AutoModelForSpeechSeq2Seq.from_config(AutoConfig.for_model(**config))
    model.eval().save_pretrained(folder)
    return {"files": sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*"))}

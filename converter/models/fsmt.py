"""FSMT (fairseq's WMT19 translation models): BART's post-norm layers without
layernorm_embedding, scaled embeddings, a source and a target vocabulary (src_vocab_size,
tgt_vocab_size), each stack its own token table, and the logits from the decoder's own
`output_projection`. Positions are fairseq's sinusoids read from the table the checkpoint
stores (max_position_embeddings + padding_idx + 1 rows) at padding_idx + the count of real
tokens so far, padding at padding_idx; in the decoder the past length is added after the
padding is masked, as transformers does."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir

from converter.components.linear import Linear
from converter.components.positions import LearnedPositions, real_tokens
from converter.config.reader import MAX_VOCAB, ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.errors import ConfigError
from converter.models.marian import SourceTable
from converter.models.seq2seq import Seq2SeqDecoder, Seq2SeqEncoder, Seq2SeqModel
from converter.registry import Family


class FairseqTable:
    """The stored sinusoid table, read at padding_idx + the count of real tokens (padding at
    padding_idx), plus `start` (the decoder's past length) for every token."""

    def make_positions(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return LearnedPositions(cfg.max_positions + cfg.pad_token_id + 1, cfg.d_model, dtype)

    def position_ids(self, op, input_ids, start=None):
        pad = self.cfg.pad_token_id
        real = real_tokens(op, input_ids, pad)
        positions = op.Add(op.Mul(op.CumSum(real, 1), real), pad)
        return positions if start is None else op.Add(positions, start)


class FSMTEncoder(FairseqTable, SourceTable, Seq2SeqEncoder):
    pass


class FSMTDecoder(FairseqTable, Seq2SeqDecoder):
    """Ends in its own output_projection to the target vocabulary."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__(cfg, dtype, layers)
        self.output_projection = Linear(cfg.d_model, cfg.vocab_size, False, dtype, head=True)

    def decode(self, op, input_ids, tokens, self_past, cross, kernels):
        hidden, presents = super().decode(op, input_ids, tokens, self_past, cross, kernels)
        return self.output_projection(op, hidden), presents


class FSMTModel(Seq2SeqModel):
    encoder_cls = FSMTEncoder
    decoder_cls = FSMTDecoder

    def make_head(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return None  # the decoder's output_projection

    def logits(self, op, hidden):
        return hidden  # already projected by the decoder


class FSMTRules(Seq2SeqRules):
    """tgt_vocab_size is the decoder's (and the logits') vocab_size; src_vocab_size the
    encoder's (extra source_vocab_size)."""

    def __init__(self) -> None:
        super().__init__(embedding_norm=False, position_offset=0)

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        r.alias(tgt_vocab_size="vocab_size")
        if r.bool("tie_word_embeddings", False):
            r.refuse(
                "tie_word_embeddings",
                "FSMT's tying makes the encoder's table, the decoder's and output_projection "
                "one tensor; the graph reads them apart",
            )
        cfg = super().read(r)
        if cfg.pad_token_id is None:
            raise ConfigError("'pad_token_id' is missing: FSMT's positions count from it")
        source = r.int("src_vocab_size", hi=MAX_VOCAB)
        return dataclasses.replace(cfg, extra={**cfg.extra, "source_vocab_size": source})


FAMILIES = [
    Family(
        "fsmt",
        FSMTModel,
        "fairseq's translation encoder-decoder: post-norm, source and target vocabularies, "
        "the decoder's own output_projection, fairseq's sinusoidal positions counted over "
        "non-padding tokens",
        ("facebook/wmt19-en-de", "facebook/wmt19-ru-en"),
        rules=FSMTRules(),
        task="translation",
        category="seq2seq",
        prefix="model.",
    ),
]

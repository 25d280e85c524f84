"""Marian (Opus-MT): BART's post-norm layers without layernorm_embedding, and Marian's
sinusoidal positions: [sin | cos] at frequencies 10000^(-2i / d_model), read from the
checkpoint where it stores the table (transformers then reads it too), else computed in the
graph. The token table is `shared` by both stacks (share_encoder_decoder_embeddings), or one per
stack, the decoder's decoder_vocab_size rows long; the LM head is tied to the decoder's table
unless tie_word_embeddings is false."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir

from converter.components.embedding import Embedding
from converter.components.positions import LearnedPositions, SinusoidalPositions
from converter.config.reader import MAX_VOCAB, ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.errors import ConfigError
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.decoder import tied_logits
from converter.models.seq2seq import Seq2SeqBody, Seq2SeqDecoder, Seq2SeqEncoder, Seq2SeqModel
from converter.registry import Family


def marian_positions(cfg: Seq2SeqConfig, dtype: ir.DataType) -> SinusoidalPositions:
    """[sin | cos] of position * 10000^(-2i / d_model), i < d_model / 2 (Marian's and
    Pegasus' table, XLM's sinusoids without interleaving)."""
    if cfg.d_model % 2:
        raise ConfigError(
            f"'d_model' = {cfg.d_model}: Marian's sinusoids are built for even widths"
        )
    return SinusoidalPositions(10000.0 ** (-2 * np.arange(cfg.d_model // 2) / cfg.d_model), dtype)


def stored(tensors: frozenset[str], name: str) -> bool:
    """Whether the checkpoint holds `name` (`model.` prefixed or not)."""
    return name in tensors or f"model.{name}" in tensors


class SinusoidalStack:
    """A stack whose positions are Marian's sinusoids (a stored table replaces them: see
    `SinusoidalBody`)."""

    def make_positions(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return marian_positions(cfg, dtype)


class SinusoidalBody(Seq2SeqBody):
    """Reads the position table a stack's checkpoint stores (max_position_embeddings rows at
    the position itself), else keeps the computed sinusoids."""

    def __init__(self, owner, cfg: Seq2SeqConfig, dtype: ir.DataType, part: str):
        super().__init__(owner, cfg, dtype, part)
        for name in ("encoder", "decoder"):
            stack = getattr(self, name)
            if stack is not None and stored(owner.tensors, f"{name}.embed_positions.weight"):
                stack.embed_positions = LearnedPositions(cfg.max_positions, cfg.d_model, dtype)


class SinusoidalEncoder(SinusoidalStack, Seq2SeqEncoder):
    pass


class SinusoidalDecoder(SinusoidalStack, Seq2SeqDecoder):
    pass


class SinusoidalModel(Seq2SeqModel):
    """The generic encoder-decoder on Marian's sinusoidal positions (Marian, Pegasus)."""

    body_cls = SinusoidalBody
    encoder_cls = SinusoidalEncoder
    decoder_cls = SinusoidalDecoder


class SourceTable:
    """An encoder stack with its own table of the source vocabulary (extra source_vocab_size)
    when that differs from the decoder's (Marian's unshared tables, FSMT)."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__(cfg, dtype, layers)
        source = cfg.extra.get("source_vocab_size", cfg.vocab_size)
        if self.embed_tokens is not None and source != cfg.vocab_size:
            self.embed_tokens = Embedding(source, cfg.d_model, dtype, self.embed_tokens.scale)


class MarianEncoder(SourceTable, SinusoidalEncoder):
    pass


class MarianModel(SinusoidalModel):
    """With tables per stack (not shared), the tied head is the decoder's table."""

    encoder_cls = MarianEncoder

    def make_head(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return None if cfg.extra.get("head_is_decoder_table") else super().make_head(cfg, dtype)

    def logits(self, op, hidden):
        if not self.cfg.extra.get("head_is_decoder_table"):
            return super().logits(op, hidden)
        logits = tied_logits(op, self.cfg, self.body.decoder.embed_tokens.weight, hidden)
        bias = getattr(self, self.bias_name)
        return logits if bias is None else op.Add(logits, bias)


class MarianRules(Seq2SeqRules):
    """share_encoder_decoder_embeddings false: a table per stack, `vocab_size` the encoder's
    (kept in extra as source_vocab_size) and decoder_vocab_size the decoder's and the head's
    (the config's vocab_size from here on); the tables are then untied for the generic model
    and a tied head reads the decoder's table (extra head_is_decoder_table)."""

    def __init__(self) -> None:
        super().__init__(embedding_norm=False, position_kind="sinusoidal", position_offset=0)

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        decoder_vocab = r.int("decoder_vocab_size", default=cfg.vocab_size, hi=MAX_VOCAB)
        if r.bool("share_encoder_decoder_embeddings", True):
            if decoder_vocab != cfg.vocab_size:
                r.refuse(
                    "decoder_vocab_size",
                    f"a table shared by both stacks has vocab_size = {cfg.vocab_size} rows",
                )
            return cfg
        if cfg.decoder_start_token_id >= decoder_vocab:
            raise ConfigError(
                f"'decoder_start_token_id' = {cfg.decoder_start_token_id} is outside the "
                f"decoder's vocabulary (decoder_vocab_size {decoder_vocab})"
            )
        return dataclasses.replace(
            cfg,
            vocab_size=decoder_vocab,
            tie_word_embeddings=False,
            extra={
                **cfg.extra,
                "source_vocab_size": cfg.vocab_size,
                "head_is_decoder_table": cfg.tie_word_embeddings,
            },
        )


FAMILIES = [
    Family(
        "marian",
        MarianModel,
        "encoder-decoder, post-norm without layernorm_embedding, sinusoidal positions "
        "([sin | cos]), shared or per-stack token tables",
        ("Helsinki-NLP/opus-mt-en-de", "Helsinki-NLP/opus-mt-fr-en"),
        rules=MarianRules(),
        task="translation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

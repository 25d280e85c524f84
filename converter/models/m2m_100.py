"""M2M-100 (and NLLB's dense checkpoints): pre-norm layers with a final layer_norm per stack, no
layernorm_embedding, scaled embeddings, and fairseq's sinusoidal positions counted over the
tokens that are not padding (RoBERTa's way): position = padding_idx + the count of real tokens so
far (plus, in the decoder, the past length), padding itself at padding_idx, whose row is zero.
The table ([sin | cos] at frequencies exp(-i ln(10000) / (d_model/2 - 1))) is computed."""

from __future__ import annotations

import onnx_ir as ir

from converter.components.positions import (
    SinusoidalPositions,
    counted_positions,
    fairseq_frequencies,
    real_tokens,
)
from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.errors import ConfigError
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.seq2seq import Seq2SeqDecoder, Seq2SeqEncoder, Seq2SeqModel
from converter.registry import Family


def fairseq_positions(cfg: Seq2SeqConfig, dtype: ir.DataType) -> SinusoidalPositions:
    """fairseq's sinusoids, the padding_idx row zeroed."""
    return SinusoidalPositions(fairseq_frequencies(cfg.d_model), dtype, zero_at=cfg.pad_token_id)


class PaddingAwareStack:
    """Positions padding_idx + 1, + 2, ... over the real tokens (after the past, in the
    decoder), padding_idx at padding."""

    def make_positions(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return fairseq_positions(cfg, dtype)

    def position_ids(self, op, input_ids, start=None):
        pad = self.cfg.pad_token_id
        return counted_positions(op, real_tokens(op, input_ids, pad), pad, start)


class M2M100Encoder(PaddingAwareStack, Seq2SeqEncoder):
    pass


class M2M100Decoder(PaddingAwareStack, Seq2SeqDecoder):
    pass


class M2M100Model(Seq2SeqModel):
    encoder_cls = M2M100Encoder
    decoder_cls = M2M100Decoder


class M2M100Rules(Seq2SeqRules):
    def __init__(self) -> None:
        super().__init__(
            pre_norm=True, embedding_norm=False, position_kind="sinusoidal", position_offset=0
        )

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        if cfg.pad_token_id is None:
            raise ConfigError("'pad_token_id' is missing: M2M-100's positions count from it")
        return cfg


FAMILIES = [
    Family(
        "m2m_100",
        M2M100Model,
        "encoder-decoder, pre-norm with a final layer_norm per stack, scaled embeddings, "
        "fairseq's sinusoidal positions counted over non-padding tokens (NLLB's dense "
        "checkpoints too)",
        ("facebook/m2m100_418M", "facebook/nllb-200-distilled-600M"),
        rules=M2M100Rules(),
        task="translation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

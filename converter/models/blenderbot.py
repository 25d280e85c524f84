"""Blenderbot: the generic encoder-decoder with pre-norm layers, a final layer_norm per stack,
no layernorm_embedding, and learned positions read at the position itself (no +2 offset)."""

from __future__ import annotations

from converter.config.seq2seq import Seq2SeqRules
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.seq2seq import Seq2SeqModel
from converter.registry import Family

FAMILIES = [
    Family(
        "blenderbot",
        Seq2SeqModel,
        "encoder-decoder, pre-norm with a final layer_norm per stack, learned positions "
        "without offset",
        ("facebook/blenderbot-400M-distill", "facebook/blenderbot-1B-distill"),
        rules=Seq2SeqRules(pre_norm=True, embedding_norm=False, position_offset=0),
        task="text2text-generation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

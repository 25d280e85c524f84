"""Pegasus: the generic encoder-decoder with pre-norm layers, a final layer_norm per stack, no
layernorm_embedding, and Marian's sinusoidal positions (a table its checkpoints store)."""

from __future__ import annotations

from converter.config.seq2seq import Seq2SeqRules
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.marian import SinusoidalModel
from converter.registry import Family

FAMILIES = [
    Family(
        "pegasus",
        SinusoidalModel,
        "encoder-decoder, pre-norm with a final layer_norm per stack, sinusoidal positions "
        "([sin | cos])",
        ("google/pegasus-xsum", "google/pegasus-cnn_dailymail"),
        rules=Seq2SeqRules(
            pre_norm=True, embedding_norm=False, position_kind="sinusoidal", position_offset=0
        ),
        task="summarization",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

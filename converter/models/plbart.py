"""PLBart: BART's encoder-decoder unchanged (post-norm, layernorm_embedding, learned positions
at +2); its config scales the embeddings by default, and generation starts from a language id
token (generation_config's decoder_start_token_id), which the graphs do not see."""

from __future__ import annotations

from converter.config.seq2seq import Seq2SeqRules
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.seq2seq import Seq2SeqModel
from converter.registry import Family

FAMILIES = [
    Family(
        "plbart",
        Seq2SeqModel,
        "BART's encoder-decoder for code (scaled embeddings by default)",
        ("uclanlp/plbart-base", "uclanlp/plbart-java-cs"),
        rules=Seq2SeqRules(),
        task="text2text-generation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

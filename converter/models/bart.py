"""BART and mBART: the generic encoder-decoder (converter/models/seq2seq.py), post-norm with
layernorm_embedding (BART) or pre-norm with a final layer_norm per stack as well (mBART)."""

from __future__ import annotations

from converter.config.seq2seq import Seq2SeqRules
from converter.models.seq2seq import Seq2SeqModel
from converter.registry import Family

# copies of the shared table some checkpoints carry (transformers ties them to `shared`; an
# untied config reads them and leaves `shared` unread)
SEQ2SEQ_UNUSED = (
    r"(model\.)?(encoder|decoder)\.embed_tokens\.weight",
    r"(model\.)?shared\.weight",
)

FAMILIES = [
    Family(
        "bart",
        Seq2SeqModel,
        "encoder-decoder, learned positions (+2 offset), post-norm with layernorm_embedding",
        ("facebook/bart-large-cnn", "sshleifer/distilbart-cnn-12-6"),
        rules=Seq2SeqRules(),
        task="text2text-generation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
    Family(
        "mbart",
        Seq2SeqModel,
        "BART's encoder-decoder with pre-norm layers and a final layer_norm per stack",
        ("facebook/mbart-large-50-many-to-many-mmt",),
        rules=Seq2SeqRules(pre_norm=True),
        task="text2text-generation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

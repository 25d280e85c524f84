"""BERT: the encoder whose layout most text encoders share (converter/models/encoder.py)."""

from __future__ import annotations

from converter.config.encoder import EncoderRules
from converter.models.encoder import BertEncoderModel
from converter.registry import Family

# buffers older checkpoints carry, the next-sentence head of BertForPreTraining, and a pooler
# a head without one leaves unread
BERT_UNUSED = (
    r"(bert\.)?embeddings\.position_ids",
    r"(bert\.)?embeddings\.token_type_ids",
    r"cls\.seq_relationship\..*",
    r"(bert\.)?pooler\..*",
)

FAMILIES = [
    Family(
        "bert",
        BertEncoderModel,
        "post-norm encoder, learned positions and token types",
        ("google-bert/bert-base-uncased", "sentence-transformers/all-MiniLM-L6-v2"),
        rules=EncoderRules(),
        task="feature-extraction",
        category="encoder",
        unused=BERT_UNUSED,
        prefix="bert.",
    ),
]

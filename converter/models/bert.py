"""BERT: the encoder whose layout most text encoders share (converter/models/encoder.py)."""

from __future__ import annotations

from converter.config.encoder import EncoderRules
from converter.models.encoder import BertEncoderModel
from converter.registry import Family

# buffers older checkpoints carry, and what a task leaves unread: the heads of other tasks
# (`--task feature-extraction` of a classifier), the next-sentence head of BertForPreTraining
# and a pooler the head does not use
BERT_UNUSED = (
    r"(bert\.)?embeddings\.position_ids",
    r"(bert\.)?embeddings\.token_type_ids",
    r"cls\..*",
    r"classifier\..*",
    r"qa_outputs\..*",
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

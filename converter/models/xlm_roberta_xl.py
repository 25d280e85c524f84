"""XLM-RoBERTa-XL: RoBERTa with pre-norm layers, no LayerNorm on the embeddings and a final
encoder.LayerNorm."""

from __future__ import annotations

from converter.models.encoder import BertEmbeddings
from converter.models.prenorm import (
    PreNormAttention,
    PreNormBody,
    PreNormEncoder,
    PreNormLayer,
)
from converter.models.roberta import RobertaModel, RobertaRules, roberta_unused
from converter.registry import Family


class XLEmbeddings(BertEmbeddings):
    normed = False


class XLAttention(PreNormAttention):
    norm_name = "self_attn_layer_norm"


class XLLayer(PreNormLayer):
    attention_cls = XLAttention


class XLEncoder(PreNormEncoder):
    layer_cls = XLLayer


class XLBody(PreNormBody):
    embeddings_cls = XLEmbeddings
    encoder_cls = XLEncoder


class XLMRobertaXLModel(RobertaModel):
    body_cls = XLBody


FAMILIES = [
    Family(
        "xlm-roberta-xl",
        XLMRobertaXLModel,
        "multilingual RoBERTa with pre-norm layers",
        ("facebook/xlm-roberta-xl",),
        rules=RobertaRules(),
        task="feature-extraction",
        category="encoder",
        unused=roberta_unused("roberta"),
        prefix="roberta.",
    ),
]

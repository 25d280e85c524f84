"""Megatron-BERT: BERT with pre-norm layers (`ln`), no LayerNorm on the embeddings and a final
encoder.ln; BERT's heads and pooler."""

from __future__ import annotations

from converter.config.encoder import EncoderRules
from converter.models.bert import BERT_UNUSED
from converter.models.encoder import BertEmbeddings, BertEncoderModel
from converter.models.prenorm import PreNormAttention, PreNormBody, PreNormEncoder, PreNormLayer
from converter.registry import Family


class MegatronEmbeddings(BertEmbeddings):
    normed = False


class MegatronAttention(PreNormAttention):
    norm_name = "ln"


class MegatronLayer(PreNormLayer):
    attention_cls = MegatronAttention
    mlp_norm_name = "ln"


class MegatronEncoder(PreNormEncoder):
    layer_cls = MegatronLayer
    final_norm_name = "ln"


class MegatronBody(PreNormBody):
    embeddings_cls = MegatronEmbeddings
    encoder_cls = MegatronEncoder


class MegatronBertModel(BertEncoderModel):
    body_cls = MegatronBody


FAMILIES = [
    Family(
        "megatron-bert",
        MegatronBertModel,
        "BERT with pre-norm layers and a final norm",
        ("UFNLP/gatortron-base",),
        rules=EncoderRules(),
        task="feature-extraction",
        category="encoder",
        unused=BERT_UNUSED,
        prefix="bert.",
    ),
]

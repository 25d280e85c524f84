"""NanoChat: norms without weights (also on the embeddings and per head on q/k), rotary with
flipped signs, a plain relu² MLP and a final logit softcap."""

import dataclasses

from converter.components import Embedding, PlainMLP, RMSNorm
from converter.config import ConfigReader, ConfigRules, Rope
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class NormedEmbedding(Embedding):
    """Token embeddings normalized before the first layer (by the weightless final norm)."""

    def __init__(self, cfg, dtype):
        super().__init__(cfg.vocab_size, cfg.hidden_size, dtype)
        self.norm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype, affine=False)

    def forward(self, op, tokens, embedded: bool = False):
        return self.norm(op, super().forward(op, tokens, embedded))


class NanoChatLayer(DecoderLayer):
    mlp_cls = PlainMLP


class NanoChatBody(DecoderBody):
    layer_cls = NanoChatLayer

    def make_embedding(self, cfg, dtype) -> NormedEmbedding:
        return NormedEmbedding(cfg, dtype)


class NanoChatLM(DecoderLM):
    body_cls = NanoChatBody


class NanoChatRules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return dataclasses.replace(super().rope(r, head_dim), reverse=True)


FAMILIES = [
    Family(
        "nanochat",
        NanoChatLM,
        "weightless RMSNorms (embeddings, q/k per head too), sign-flipped rotary, relu² MLP",
        ("karpathy/nanochat-d32",),
        # q/k are normed after the rotary in transformers: the same, as rotating keeps the RMS
        rules=NanoChatRules(norm_affine=False, qk_norm="head"),
    ),
]

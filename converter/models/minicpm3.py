"""MiniCPM3: Llama with multi-head latent attention (components/mla.py, rotate_half pairs),
embeddings scaled by `scale_emb`, each residual branch by scale_depth / sqrt(layers), and the
last hidden state by dim_model_base / hidden_size before the head."""

from __future__ import annotations

import dataclasses
import math

from converter.components.mla import GQA_REFUSED, LatentAttention, latent_caches
from converter.config import ConfigReader
from converter.config.mla import MLAConfig, MLARules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class MiniCPM3Layer(DecoderLayer):
    attention_cls = LatentAttention


class MiniCPM3Body(DecoderBody):
    layer_cls = MiniCPM3Layer
    gqa_refused = GQA_REFUSED

    def embed(self, op, inputs):
        if inputs.embedded:  # transformers scales the looked-up rows only, not inputs_embeds
            return inputs.tokens
        return super().embed(op, inputs)


class MiniCPM3LM(DecoderLM):
    body_cls = MiniCPM3Body

    def caches(self):
        return latent_caches(self.cfg)


class MiniCPM3Rules(MLARules):
    def read(self, r: ConfigReader) -> MLAConfig:
        cfg = super().read(r)
        layers, hidden = cfg.num_hidden_layers, cfg.hidden_size
        # null scale_depth / dim_model_base mean "no scaling", as transformers reads them
        depth = r.float("scale_depth") if r.has("scale_depth") else math.sqrt(layers)
        base = r.int("dim_model_base") if r.has("dim_model_base") else hidden
        return dataclasses.replace(
            cfg,
            embedding_multiplier=r.float("scale_emb"),
            residual_multiplier=depth / math.sqrt(layers),
            logits_multiplier=base / hidden,
        )


FAMILIES = [
    Family(
        "minicpm3",
        MiniCPM3LM,
        "multi-head latent attention (latent KV cache); scaled embeddings, residuals and logits",
        ("openbmb/MiniCPM3-4B",),
        rules=MiniCPM3Rules(),
        category="mla",
    ),
]

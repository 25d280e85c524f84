"""Apertus (and Apertus 1.5's text model): Llama with per-head q/k RMSNorm, an ungated up/down
MLP with the trained xIELU activation, and its norms named for the block they precede.
Apertus 1.5 may prune its LM head to the text ids (`output_vocab_size`)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from converter.components import UpDownMLP
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class ApertusLayer(DecoderLayer):
    mlp_cls = UpDownMLP
    layout_norms: ClassVar = {"pre": ("attention_layernorm", "feedforward_layernorm")}


class ApertusBody(DecoderBody):
    layer_cls = ApertusLayer


class ApertusLM(DecoderLM):
    body_cls = ApertusBody


class Apertus1p5Rules(ConfigRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        cfg = super().read(r)
        if not r.has("output_vocab_size"):
            return cfg
        rows = r.int("output_vocab_size", hi=cfg.vocab_size)
        if rows == cfg.vocab_size:
            return cfg
        if cfg.tie_word_embeddings:
            r.refuse("output_vocab_size", "a pruned LM head cannot be tied to the embeddings")
        return dataclasses.replace(cfg, output_vocab_size=rows)


_APERTUS = {"qk_norm": "head", "mlp_bias": False}
FAMILIES = [
    Family(
        "apertus",
        ApertusLM,
        "per-head q/k RMSNorm, ungated MLP with trained xIELU, llama3 rope",
        ("swiss-ai/Apertus-8B-Instruct-2509",),
        rules=ConfigRules(**_APERTUS),
    ),
    Family(
        "apertus1p5_text",
        ApertusLM,
        "Apertus; LM head optionally pruned to the text ids (`output_vocab_size`)",
        rules=Apertus1p5Rules(**_APERTUS),
    ),
]

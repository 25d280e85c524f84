"""Apertus (and Apertus 1.5's text model): Llama with per-head q/k RMSNorm, an ungated up/down
MLP with the trained xIELU activation, and its norms named for the block they precede.
Apertus 1.5 may prune its LM head to the text ids (`output_vocab_size`)."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, UpDownMLP, make_norm
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.execution_providers import PACKED_QKV, SKIP_NORM
from converter.models.decoder import DecoderBody, DecoderLM, attention_spec
from converter.registry import Family


class ApertusLayer(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.index = index
        self.attention_layernorm = make_norm(cfg, cfg.hidden_size, dtype)
        spec = attention_spec(cfg, index)
        self.self_attn = Attention(cfg, dtype, spec, packed=ep.has(PACKED_QKV))
        self.feedforward_layernorm = make_norm(cfg, cfg.hidden_size, dtype)
        self.mlp = UpDownMLP(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a residual sum, but the first layer's attention norm (the embeddings)
        return {"skip_norms": 1 + int(self.index > 0)} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.attention_layernorm(op, x)
        a, key, value = self.self_attn(op, h, kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.feedforward_layernorm(op, x))), key, value


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

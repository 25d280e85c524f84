"""Cohere (Command R), Cohere 2 (Command R7B / A) and the Cohere Compass text decoder: attention
and MLP in parallel off one scale-only LayerNorm, tied embeddings, logits times `logit_scale`.

Command R rotates interleaved pairs and may normalize q and k per head, each head with its own
scale (`q_norm.weight` [heads, head_dim]). Cohere 2 alternates sliding-window layers, which
rotate, with full-attention layers without positions (3:1 by default). Compass sets the rope of
each layer type in `rope_parameters` (null: none) and rotates halves; its 3-D M-RoPE sections
coincide with plain rope for text positions, where all three axes are equal.
"""

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention
from converter.components.norms import HeadwiseLayerNorm
from converter.config import (
    FULL,
    SLIDING,
    ArchitectureConfig,
    ConfigReader,
    ConfigRules,
    Rope,
    parse_rope,
)
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class CohereHeadNorm(HeadwiseLayerNorm):
    def __init__(self, heads: int, head_dim: int, eps: float, dtype: ir.DataType):
        super().__init__(head_dim, eps, dtype)
        self.weight = nn.Parameter([heads, head_dim], dtype)

    def scale(self, op):
        return self.weight


class CohereAttention(Attention):
    def make_qk_norm(self, cfg, heads: int, dtype: ir.DataType):
        return CohereHeadNorm(heads, cfg.head_dim, cfg.norm_eps, dtype)


class CohereLayer(DecoderLayer):
    attention_cls = CohereAttention


class CohereBody(DecoderBody):
    layer_cls = CohereLayer


class CohereLM(DecoderLM):
    body_cls = CohereBody


class CohereRules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return dataclasses.replace(super().rope(r, head_dim), interleaved=True)

    def qk_norm(self, r: ConfigReader) -> str | None:
        return "head" if r.bool("use_qk_norm", default=False) else None

    def logit_scale(self, r: ConfigReader) -> float:
        return r.float("logit_scale", positive=False)

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        return dataclasses.replace(super().read(r), logits_multiplier=self.logit_scale(r))


class Cohere2Rules(CohereRules):
    def head_dim(self, r: ConfigReader, hidden: int, heads: int) -> int:
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        return hidden // heads  # transformers sets head_dim so, whatever config.json says

    def qk_norm(self, r: ConfigReader) -> str | None:
        return None

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return None  # full-attention layers have no positions

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return super().rope(r, head_dim)

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        pattern = r.int("sliding_window_pattern", default=4)
        return SLIDING if (index + 1) % pattern else FULL


class CohereCompassRules(Cohere2Rules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return self._rope_of(r, head_dim, FULL)

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        rope = self._rope_of(r, head_dim, SLIDING)
        if rope is None and self.rope(r, head_dim) is not None:
            r.refuse(
                "rope_parameters",
                "sliding layers without rope while full-attention layers rotate is not "
                "expressible yet (a layer without rope of its own takes the full layers' rope)",
            )
        return rope

    def _rope_of(self, r: ConfigReader, head_dim: int, layer_type: str) -> Rope | None:
        layer_types = r.raw.get("layer_types") or [FULL]
        source = r.raw.get("rope_parameters") or {}
        if layer_type not in layer_types:
            return None
        if layer_type not in source:
            raise ConfigError(f"'rope_parameters' has no entry for {layer_type} layers")
        if source[layer_type] is None:
            return None
        return parse_rope(r.raw, head_dim=head_dim, layer_type=layer_type)

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL

    def logit_scale(self, r: ConfigReader) -> float:
        return r.float("logit_scale", default=1.0, positive=False)


_COHERE = {"norm_type": "layer", "norm_bias": False, "layout": "parallel"}
FAMILIES = [
    Family(
        "cohere",
        CohereLM,
        "parallel attention+MLP off one scale-only LayerNorm, interleaved rotary, per-head "
        "q/k norms, logit scale",
        ("CohereLabs/c4ai-command-r-v01",),
        rules=CohereRules(**_COHERE),
    ),
    Family(
        "cohere2",
        CohereLM,
        "Cohere with sliding-window layers (rotary) and full-attention layers without positions",
        ("CohereLabs/c4ai-command-r7b-12-2024",),
        rules=Cohere2Rules(**_COHERE),
    ),
    Family(
        "cohere_compass_text",
        CohereLM,
        "Cohere 2 with a rope (or none) per layer type, rotating halves",
        rules=CohereCompassRules(**_COHERE),
    ),
]

"""GPT-Neo: GPT-2's layout with torch Linear layers, unscaled attention (no 1/sqrt(d)), and
layers alternating global and local (windowed) attention as `attention_types` lists them."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, FcProjMLP
from converter.components.attention import AttentionSpec
from converter.config import FULL, SLIDING, ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.errors import ConfigError
from converter.models.gpt2 import GPT2LM, GPT2Block, GPT2Body
from converter.registry import Family


class NeoSelfAttention(Attention):
    out_proj_name = "out_proj"


class GPTNeoAttention(nn.Module):
    """`attn.attention`: the projections sit one module deeper than GPT-2's (EXAONE 3's too)."""

    def __init__(self, cfg, dtype: ir.DataType, spec: AttentionSpec, packed: bool = False):
        super().__init__()
        self.attention = NeoSelfAttention(cfg, dtype, spec, packed)

    def forward(self, op, x, kernel, past_key, past_value):
        return self.attention(op, x, kernel, past_key, past_value)


class GPTNeoBlock(GPT2Block):
    attention_cls, mlp_cls = GPTNeoAttention, FcProjMLP


class GPTNeoBody(GPT2Body):
    layer_cls = GPTNeoBlock


class GPTNeoLM(GPT2LM):
    body_cls = GPTNeoBody


_LAYER_TYPES = {"global": FULL, "local": SLIDING}


class GPTNeoRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        r.alias(num_heads="num_attention_heads", num_layers="num_hidden_layers")
        r.alias(window_size="sliding_window")
        return super().read(r)

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        """`attention_types` [[["global", "local"], repeats], ...], expanded, at `index`."""
        spec = r.get("attention_types", default=[[["global", "local"], 12]])
        try:
            kinds = [kind for pattern, repeats in spec for _ in range(repeats) for kind in pattern]
        except (TypeError, ValueError):
            form = "[[[types], repeats], ...]"
            raise ConfigError(f"'attention_types' = {spec!r} is not {form}") from None
        # like transformers, layers past the last one leave their entries unread
        if len(kinds) < r.int("num_hidden_layers") or not set(kinds) <= set(_LAYER_TYPES):
            raise ConfigError(
                f"'attention_types' = {spec!r} must give one of {sorted(_LAYER_TYPES)} per layer"
            )
        return _LAYER_TYPES[kinds[index]]

    def attention_scale(self, r: ConfigReader, head_dim: int) -> float:
        return 1.0  # GPT-Neo does not scale its attention scores


FAMILIES = [
    Family(
        "gpt_neo",
        GPTNeoLM,
        "learned positions, unscaled attention, alternating global and local attention",
        ("EleutherAI/gpt-neo-125m",),
        rules=GPTNeoRules(
            norm_type="layer", qkv_bias=False, o_bias=True, mlp_bias=True, rope=False
        ),
        unused=(r"(transformer\.)?h\.\d+\.attn\.attention\.(masked_)?bias",),
        prefix="transformer.",
    ),
]

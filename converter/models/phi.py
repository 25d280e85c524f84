"""Phi-1/1.5/2: parallel attention and MLP off one LayerNorm, partial rotary, `dense` output.

The generic decoder with Phi's state-dict names: `self_attn.dense`, `q_layernorm`/
`k_layernorm`, `mlp.fc1`/`fc2`, `model.final_layernorm` and a biased `lm_head`.
"""

from __future__ import annotations

from converter.components import Attention, PlainMLP
from converter.config import ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class PhiAttention(Attention):
    out_proj_name = "dense"
    qk_norm_names = ("q_layernorm", "k_layernorm")


class PhiLayer(DecoderLayer):
    attention_cls = PhiAttention
    mlp_cls = PlainMLP


class PhiBody(DecoderBody):
    layer_cls = PhiLayer
    final_norm_name = "final_layernorm"


class PhiLM(DecoderLM):
    body_cls = PhiBody
    head_bias = True


class PhiRules(ConfigRules):
    def qk_norm(self, r: ConfigReader) -> str | None:
        return "head" if r.bool("qk_layernorm", default=False) else None


FAMILIES = [
    Family(
        "phi",
        PhiLM,
        "parallel attention+MLP, partial rotary, LayerNorm",
        ("microsoft/phi-2",),
        rules=PhiRules(
            layout="parallel", norm_type="layer", qkv_bias=True, o_bias=True, mlp_bias=True
        ),
    ),
]

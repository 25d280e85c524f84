"""Persimmon: GPT-NeoX's per-head `query_key_value` and `dense` in the generic pre-norm decoder,
with LayerNorm, per-head q/k LayerNorms (`qk_layernorm`), squared-ReLU MLP, partial rotary."""

from converter.components import MegatronMLP
from converter.config import ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.gpt_neox import NeoXAttention
from converter.registry import Family


class PersimmonLayer(DecoderLayer):
    attention_cls = NeoXAttention
    mlp_cls = MegatronMLP


class PersimmonBody(DecoderBody):
    layer_cls = PersimmonLayer
    final_norm_name = "final_layernorm"


class PersimmonLM(DecoderLM):
    body_cls = PersimmonBody


class PersimmonRules(ConfigRules):
    def qk_norm(self, r: ConfigReader) -> str | None:
        return "head" if r.bool("qk_layernorm", default=True) else None


FAMILIES = [
    Family(
        "persimmon",
        PersimmonLM,
        "per-head fused query_key_value, q/k LayerNorms, squared ReLU, partial rotary",
        ("adept/persimmon-8b-base",),
        rules=PersimmonRules(
            norm_type="layer", fused_qkv=True, qkv_bias=True, o_bias=True, mlp_bias=True
        ),
    ),
]

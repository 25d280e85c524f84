"""MPT: ALiBi positions (MPT's slopes), LayerNorm without biases, fused `Wqkv` (optionally
clamped), no biases anywhere; attention settings nested in `attn_config`."""

from __future__ import annotations

from typing import ClassVar

from converter.components import Attention, UpDownMLP
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.config.alibi import Alibi, mpt_slopes
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family

_BIAS_MAX = 8
# Settings of llm-foundry's MPT that transformers' MptForCausalLM does not implement: a
# checkpoint that changes them is refused rather than converted as something else.
_ATTN_FIXED = {
    "attn_type": ("multihead_attention", "transformers' MPT has multi-head attention only"),
    "alibi": (True, "transformers' MPT always applies ALiBi (no learned positions)"),
    "qk_ln": (False, "transformers' MPT has no q/k LayerNorm"),
    "prefix_lm": (False, "a prefix-LM mask needs a prefix mask input"),
    "alibi_bias_max": (_BIAS_MAX, "transformers' MPT builds its ALiBi slopes with 8"),
}
_NORMS = ("low_precision_layernorm", "layernorm")


class MptAttention(Attention):
    qkv_proj_name, out_proj_name = "Wqkv", "out_proj"


class MptBlock(DecoderLayer):
    attention_cls, mlp_cls = MptAttention, UpDownMLP
    attention_name, mlp_name = "attn", "ffn"
    layout_norms: ClassVar = {"pre": ("norm_1", "norm_2")}


class MptBody(DecoderBody):
    layer_cls = MptBlock
    embedding_name, layers_name, final_norm_name = "wte", "blocks", "norm_f"


class MptLM(DecoderLM):
    body_cls = MptBody
    body_name = "transformer"


class MptRules(ConfigRules):
    def activation(self, r: ConfigReader) -> str:
        return "gelu"  # nn.GELU(approximate="none")

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        attn = r.section("attn_config")
        for key, (value, why) in _ATTN_FIXED.items():
            if attn.raw.get(key, value) != value:
                attn.refuse(key, why)
        if r.str("norm_type", default=_NORMS[0]) not in _NORMS:
            r.refuse("norm_type", "transformers' MPT normalizes with LayerNorm only")
        if not r.bool("no_bias", default=True):
            r.refuse("no_bias", "transformers' MPT has no biases")
        if r.has("logit_scale"):
            r.refuse("logit_scale", "transformers' MPT does not scale its logits")
        cfg = super().read(r)
        scale = attn.optional_float("softmax_scale")
        fields = {
            "intermediate_size": r.int("expansion_ratio", default=4) * cfg.hidden_size,
            "attention_scale": cfg.attention_scale if scale is None else scale,
            "clip_qkv": attn.optional_float("clip_qkv"),
            "alibi": Alibi(mpt_slopes(cfg.num_attention_heads, _BIAS_MAX)),
        }
        return ArchitectureConfig(**vars(cfg) | fields)


FAMILIES = [
    Family(
        "mpt",
        MptLM,
        "ALiBi, bias-free LayerNorm and projections, fused (clamped) Wqkv",
        ("mosaicml/mpt-7b",),
        rules=MptRules(norm_type="layer", norm_bias=False, rope=False, fused_qkv=True),
        prefix="transformer.",
    ),
]

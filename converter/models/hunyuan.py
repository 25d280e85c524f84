"""HunYuan dense (v1): Llama whose per-head q/k RMSNorms (`query_layernorm`, `key_layernorm`)
follow the rotary embedding, and whose "dynamic" rope with an `alpha` is a fixed NTK stretch."""

from __future__ import annotations

import dataclasses
from math import inf

from converter.components import Attention
from converter.config import ConfigReader, ConfigRules, Rope
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class HunYuanAttention(Attention):
    """Rotates q and k itself (the kernel's rotary would come after the norms) and hands the
    kernel a spec without a rope."""

    qk_norm_names = ("query_layernorm", "key_layernorm")

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        q, k, v = self._project(op, x)
        spec = self.spec
        if spec.rope is not None:
            q = kernel.rotate(op, q, spec.heads, spec.rope)
            k = kernel.rotate(op, k, spec.kv_heads, spec.rope)
        q = self._norm(op, self.query_layernorm, q)
        k = self._norm(op, self.key_layernorm, k)
        rotated = dataclasses.replace(spec, rope=None)
        y, present_key, present_value = kernel(op, q, k, v, past_key, past_value, rotated)
        return self.o_proj(op, y), present_key, present_value


class HunYuanLayer(DecoderLayer):
    attention_cls = HunYuanAttention


class HunYuanBody(DecoderBody):
    layer_cls = HunYuanLayer


class HunYuanLM(DecoderLM):
    body_cls = HunYuanBody

    def fallbacks(self) -> list[str]:
        note = "RotaryEmbedding outside GroupQueryAttention: q/k norms follow the rotation"
        rotates = self.model.kernel.gqa and self.cfg.rope is not None
        return super().fallbacks() + ([note] if rotates else [])


class HunYuanRules(ConfigRules):
    def head_dim(self, r: ConfigReader, hidden: int, heads: int) -> int:
        return r.int("head_dim")  # transformers 5.24 cannot build HunYuan without it

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        rope = super().rope(r, head_dim)
        params = r.get("rope_scaling", "rope_parameters", default={})
        alpha = params.get("alpha") if isinstance(params, dict) else None
        if rope.kind != "dynamic" or not alpha:
            return rope
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < inf:
            raise ConfigError(f"rope alpha must be a finite positive number, got {alpha!r}")
        # a fixed alpha stretches the base once, whatever the sequence length
        theta = rope.theta * alpha ** (head_dim / (head_dim - 2))
        positions, sections = rope.max_position_embeddings, rope.mrope_section  # HunYuanVL's
        return Rope("default", theta, head_dim, positions, mrope_section=sections)


FAMILIES = [
    Family(
        "hunyuan_v1_dense",
        HunYuanLM,
        "per-head q/k RMSNorm after the rotary embedding; NTK-alpha rope",
        ("tencent/Hunyuan-7B-Instruct",),
        rules=HunYuanRules(qk_norm="head", mlp_bias=False),
    ),
]

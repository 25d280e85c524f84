"""AFMoE (Arcee Trinity): sandwich norms (`pre_mlp_layernorm`/`post_mlp_layernorm` around the
MLP), per-head q/k RMSNorm, attention outputs gated by `sigmoid(gate_proj(x))` before
`o_proj`; sliding-window layers rotate, every `global_attn_every_n_layers`-th layer attends to
all with no rotary (NoPE). After the first `num_dense_layers` dense MLPs, experts picked by
sigmoid score plus a selection-only bias (`expert_bias`), renormalized, scaled by
`route_scale`, plus `num_shared_experts` shared experts as one MLP; `mup_enabled` scales the
embeddings by sqrt(hidden_size)."""

import dataclasses
import math
from typing import ClassVar

from converter.components.attention import Attention
from converter.components.linear import Linear
from converter.config import FULL, SLIDING, ConfigReader, Rope
from converter.config.moe import MoeConfig, MoeRules, sigmoid_renormalized
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.hy_v3 import HyV3Moe
from converter.registry import Family


class AfmoeRules(MoeRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        every = r.int("global_attn_every_n_layers", default=4)
        return SLIDING if (index + 1) % every else FULL

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        return tuple(rope if kind == SLIDING else None for kind in layer_types)

    def read(self, r: ConfigReader):
        cfg = super().read(r)
        if r.bool("mup_enabled", False):
            cfg = dataclasses.replace(cfg, embedding_multiplier=math.sqrt(cfg.hidden_size))
        return cfg

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        dense = r.int("num_dense_layers", default=1, lo=0, hi=cfg.num_hidden_layers)
        return sigmoid_renormalized(
            moe,
            scaling=r.float("route_scale", default=1.0),
            shared_size=moe.expert_size * r.int("num_shared_experts", default=2, lo=0),
            sparse_layers=tuple(i >= dense for i in range(cfg.num_hidden_layers)),
        )


class AfmoeAttention(Attention):
    """The heads' outputs times sigmoid(gate_proj(x)), then o_proj."""

    def __init__(self, cfg, dtype, spec, packed=False):
        super().__init__(cfg, dtype, spec, packed)
        self.gate_proj = Linear(cfg.hidden_size, spec.heads * spec.head_dim, False, dtype)

    def _output(self, op, y, x):
        return self.o_proj(op, op.Mul(y, op.Sigmoid(self.gate_proj(op, x))))


class AfmoeMoe(HyV3Moe):
    """Router `router.gate.weight`, selection bias `expert_bias` (as Hunyuan V3 saves them)."""

    shared_name = "shared_experts"


class AfmoeLayer(DecoderLayer):
    attention_cls = AfmoeAttention
    moe_cls = AfmoeMoe
    layout_norms: ClassVar = {
        **DecoderLayer.layout_norms,
        "sandwich": (
            "input_layernorm",
            "post_attention_layernorm",
            "pre_mlp_layernorm",
            "post_mlp_layernorm",
        ),
    }


class AfmoeBody(DecoderBody):
    layer_cls = AfmoeLayer


class AfmoeLM(DecoderLM):
    body_cls = AfmoeBody


FAMILIES = [
    Family(
        "afmoe",
        AfmoeLM,
        "sandwich norms, sigmoid-gated attention outputs, per-head q/k norms, NoPE global "
        "layers between sliding ones; sigmoid-scored experts with a selection-only bias, "
        "renormalized and scaled, plus shared experts",
        ("arcee-ai/Trinity-Mini",),
        rules=AfmoeRules(qk_norm="head", layout="sandwich"),
        category="moe",
    ),
]

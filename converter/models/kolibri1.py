"""Kolibri1: Llama with per-head q/k RMSNorm, norms around attention and MLP (sandwich, under
its own names), rotary only in sliding layers when a window is set, and experts in every layer:
picked by router logit plus a selection-only bias, weighted by the picks' sigmoid (renormalized
with `norm_topk_prob`), plus an ungated shared expert."""

import dataclasses
from types import MappingProxyType

from converter.components.moe import SparseMoe
from converter.config import FULL, SLIDING, ConfigReader, Rope
from converter.config.moe import SIGMOID, MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.moe_layers import renamed
from converter.registry import Family


class Kolibri1Rules(MoeRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL if (index + 1) % 5 == 0 else SLIDING

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        windowed = r.has("sliding_window")
        return tuple(rope if kind == SLIDING or not windowed else None for kind in layer_types)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        shared = r.int("shared_expert_intermediate_size", default=0, lo=0)
        return dataclasses.replace(
            super().moe(r, cfg), scoring=SIGMOID, correction_bias=True, shared_size=shared
        )


class Kolibri1Moe(SparseMoe):
    """The selection bias is added to the raw logits (not the sigmoid scores) and saved as
    the layer's `moe.router.expert_bias`."""

    shared_name = "shared_experts"

    def route(self, op, router, logits):
        _, picked = op.TopK(
            op.Add(logits, router.e_score_correction_bias), [self.moe.top_k], axis=-1, _outputs=2
        )
        weights = op.Sigmoid(op.GatherElements(logits, picked, axis=1))
        if self.moe.normalize:
            weights = op.Div(weights, op.ReduceSum(weights, [-1], keepdims=1))
        return op.ScatterElements(op.Mul(logits, 0.0), picked, weights, axis=1)

    def assemblies(self):
        bias = self.gate.e_score_correction_bias
        layer = bias.name.rsplit(".", 3)[0]
        return {bias.name: renamed(bias, f"{layer}.moe.router.expert_bias")}


class Kolibri1Layer(DecoderLayer):
    moe_cls = Kolibri1Moe
    layout_norms = MappingProxyType(
        {
            "sandwich": (
                "input_layernorm",
                "post_attn_norm",
                "post_attention_layernorm",
                "post_ffn_norm",
            )
        }
    )


class Kolibri1Body(DecoderBody):
    layer_cls = Kolibri1Layer


class Kolibri1LM(DecoderLM):
    body_cls = Kolibri1Body


FAMILIES = [
    Family(
        "kolibri1",
        Kolibri1LM,
        "experts picked by logit plus a selection-only bias, weighted by sigmoid, plus a shared "
        "expert; sandwich norms; rotary only in sliding layers; per-head q/k RMSNorm",
        ("Aleph-Alpha/Kolibri-1",),
        rules=Kolibri1Rules(qk_norm="head", layout="sandwich"),
        category="moe",
    ),
]

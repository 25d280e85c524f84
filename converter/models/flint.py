"""Flint: Qwen3-MoE whose attention has a learned sink logit per head (`softmax_offset`) and
rotates only in its sliding-window layers (the full layers are NoPE); experts picked by
sigmoid score (renormalized with `norm_topk_prob`) plus an ungated shared expert."""

import dataclasses

from converter.components.attention import Attention
from converter.components.moe import SparseMoe
from converter.config import FULL, SLIDING, ConfigReader, Rope
from converter.config.moe import SIGMOID, MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.moe_layers import renamed
from converter.registry import Family


class FlintRules(MoeRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        last = r.int("num_hidden_layers") - 1
        return FULL if index < 2 or index % 4 == 1 or index == last else SLIDING

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        if r.raw.get("mlp_only_layers") is None:  # transformers' default: the first two dense
            r.raw["mlp_only_layers"] = [i for i in (0, 1) if i < layers]
        return super().sparse_layers(r, layers)

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        return tuple(rope if kind == SLIDING else None for kind in layer_types)

    def read(self, r: ConfigReader):
        return dataclasses.replace(super().read(r), attention_sinks=True)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        shared = r.int("shared_expert_intermediate_size", default=0, lo=0)
        return dataclasses.replace(super().moe(r, cfg), scoring=SIGMOID, shared_size=shared)


class FlintAttention(Attention):
    def assemblies(self):
        return {
            self.sinks.name: renamed(
                self.sinks, self.sinks.name[: -len("sinks")] + "softmax_offset"
            )
        }


class FlintLayer(DecoderLayer):
    attention_cls = FlintAttention
    moe_cls = SparseMoe


class FlintBody(DecoderBody):
    layer_cls = FlintLayer


class FlintLM(DecoderLM):
    body_cls = FlintBody


FAMILIES = [
    Family(
        "flint",
        FlintLM,
        "attention sinks, rotary only in sliding layers; sigmoid-scored experts plus a shared "
        "expert; per-head q/k RMSNorm",
        ("RecursiveSI/flint",),
        rules=FlintRules(qk_norm="head"),
        category="moe",
    ),
]

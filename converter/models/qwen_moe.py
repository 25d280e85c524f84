"""Qwen2-MoE and Qwen3-MoE: Qwen2/Qwen3 with experts in the layers `decoder_sparse_step` and
`mlp_only_layers` pick; Qwen2-MoE adds a shared expert gated by a sigmoid."""

import dataclasses

from converter.components.moe import SparseMoe
from converter.config.moe import MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.qwen import QwenRules
from converter.registry import Family


class QwenMoeRules(QwenRules, MoeRules):
    pass


class Qwen2MoeRules(QwenMoeRules):
    def moe(self, r, cfg) -> MoeConfig:
        shared = r.int("shared_expert_intermediate_size", default=0, lo=0)
        return dataclasses.replace(super().moe(r, cfg), shared_size=shared)


class Qwen2Moe(SparseMoe):
    shared_gated = True


class Qwen2MoeLayer(DecoderLayer):
    moe_cls = Qwen2Moe


class Qwen2MoeBody(DecoderBody):
    layer_cls = Qwen2MoeLayer


class Qwen2MoeLM(DecoderLM):
    body_cls = Qwen2MoeBody


FAMILIES = [
    Family(
        "qwen2_moe",
        Qwen2MoeLM,
        "experts plus a shared expert behind a sigmoid gate; q/k/v biases",
        ("Qwen/Qwen1.5-MoE-A2.7B",),
        rules=Qwen2MoeRules(qkv_bias=True, o_bias=False),
        category="moe",
    ),
    Family(
        "qwen3_moe",
        DecoderLM,
        "experts in the layers `decoder_sparse_step` picks; per-head q/k RMSNorm",
        ("Qwen/Qwen3-30B-A3B",),
        rules=QwenMoeRules(qk_norm="head"),
        category="moe",
    ),
]

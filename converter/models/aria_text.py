"""Aria (text): Llama whose every MLP is experts: picked by the top-k router logits, weighted
by a softmax over the picks (softmax, top-k, renormalized), SiLU-gated whatever `hidden_act`
says, stored input-major as `experts.fc1` [E, H, 2I] (gate columns, then up) and
`experts.fc2` [E, I, H]; plus `moe_num_shared_experts` shared experts as one MLP activated by
`hidden_act`."""

import dataclasses

from converter.components.experts import InputMajor
from converter.components.mlp import GatedMLP
from converter.components.moe import SparseMoe
from converter.config import ConfigReader
from converter.config.moe import MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class AriaRules(MoeRules):
    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        shared = cfg.intermediate_size * r.int("moe_num_shared_experts", default=2, lo=0)
        return dataclasses.replace(moe, normalize=True, shared_size=shared)


class AriaMoe(SparseMoe):
    """Routed experts always SiLU-gated; the shared experts by the config's activation."""

    router_name, shared_name = "router", "shared_experts"
    layout = InputMajor("fc1.weight", "fc2.weight")

    def __init__(self, cfg, dtype, ep):
        super().__init__(dataclasses.replace(cfg, activation="silu"), dtype, ep)
        if cfg.moe.shared_size:
            shared = dataclasses.replace(cfg, intermediate_size=cfg.moe.shared_size)
            setattr(self, self.shared_name, GatedMLP(shared, dtype))


class AriaLayer(DecoderLayer):
    moe_cls = AriaMoe


class AriaBody(DecoderBody):
    layer_cls = AriaLayer


class AriaLM(DecoderLM):
    body_cls = AriaBody


FAMILIES = [
    Family(
        "aria_text",
        AriaLM,
        "experts in every layer: softmax over the top-k router logits, SiLU-gated experts "
        "stored input-major (fc1/fc2), plus shared experts as one MLP",
        ("rhymes-ai/Aria",),
        rules=AriaRules(expert_size_keys=("intermediate_size",)),
        category="moe",
    ),
]

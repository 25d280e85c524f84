"""Hunyuan V3 (hy_v3): Llama with per-head q/k RMSNorm and, in the `mlp_layer_types` sparse
layers, experts picked by sigmoid score plus a selection-only bias, renormalized and scaled by
`router_scaling_factor`, plus `num_shared_experts` shared experts as one MLP."""

from converter.components.moe import SparseMoe
from converter.config import ConfigReader
from converter.config.moe import MoeConfig, MoeRules, sigmoid_renormalized
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.moe_layers import mlp_layer_types, renamed
from converter.registry import Family


class HyV3Rules(MoeRules):
    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        return sigmoid_renormalized(
            moe,
            scaling=r.float("router_scaling_factor", default=1.0),
            shared_size=moe.expert_size * r.int("num_shared_experts", default=1, lo=0),
            sparse_layers=mlp_layer_types(r, cfg.num_hidden_layers, dense_first=1),
        )


class HyV3Moe(SparseMoe):
    """The router's weight is saved as `router.gate.weight`, its bias as the block's
    `expert_bias`."""

    router_name, shared_name = "router", "shared_mlp"

    def assemblies(self):
        weight, bias = self.router.weight, self.router.e_score_correction_bias
        block = weight.name.rsplit(".", 2)[0]
        return {
            weight.name: renamed(weight, f"{block}.router.gate.weight"),
            bias.name: renamed(bias, f"{block}.expert_bias"),
        }


class HyV3Layer(DecoderLayer):
    moe_cls = HyV3Moe


class HyV3Body(DecoderBody):
    layer_cls = HyV3Layer


class HyV3LM(DecoderLM):
    body_cls = HyV3Body


FAMILIES = [
    Family(
        "hy_v3",
        HyV3LM,
        "sigmoid-scored experts with a selection-only bias, renormalized and scaled, plus "
        "shared experts; per-head q/k RMSNorm",
        ("tencent/Hy3-preview",),
        rules=HyV3Rules(qk_norm="head"),
        category="moe",
    ),
]

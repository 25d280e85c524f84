"""HunYuan MoE (v1, Hunyuan-A13B): HunYuan dense whose MLPs are experts of the dense width,
softmax top-k renormalized, plus a shared MLP (`shared_mlp`) every token runs; the router's
projection is `gate.wg`."""

import dataclasses

from onnxscript import nn

from converter.components.moe import Router, SparseMoe
from converter.config import ConfigReader
from converter.config.moe import MoeConfig, MoeRules
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody
from converter.models.hunyuan import HunYuanLayer, HunYuanLM, HunYuanRules
from converter.registry import Family


class HunYuanMoeRules(HunYuanRules, MoeRules):
    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        for key in ("moe_intermediate_size", "num_shared_expert"):
            expected = cfg.intermediate_size if key == "moe_intermediate_size" else 1
            if any(v != expected for v in _per_layer(r, key, expected)):
                r.refuse(key, f"transformers' HunYuan MoE runs {expected} in every layer")
        if r.bool("use_cla", False):
            r.refuse("use_cla", "cross-layer attention is not in transformers' HunYuan MoE")
        moe = super().moe(r, cfg)
        return dataclasses.replace(moe, normalize=True, shared_size=cfg.intermediate_size)

    def top_k(self, r: ConfigReader) -> int:
        values = set(_per_layer(r, "moe_topk", None))
        if len(values) != 1:
            r.refuse("moe_topk", "a top-k that differs between layers")
        if isinstance(r.raw["moe_topk"], list):
            r.raw["moe_topk"] = values.pop()
        return super().top_k(r)


def _per_layer(r: ConfigReader, key: str, default) -> list:
    """A setting given once or per layer (Hunyuan-A13B's config.json lists them)."""
    value = r.raw.get(key, default)
    values = value if isinstance(value, list) else [value]
    if not values:
        raise ConfigError(f"'{key}' must not be an empty list")
    return values


class HunYuanGate(nn.Module):
    """The router, under `wg`."""

    e_score_correction_bias = None

    def __init__(self, cfg, dtype):
        super().__init__()
        self.wg = Router(cfg, dtype)

    def forward(self, op, flat):
        return self.wg(op, flat)


class HunYuanMoe(SparseMoe):
    router_cls = HunYuanGate
    shared_name = "shared_mlp"


class HunYuanMoeLayer(HunYuanLayer):
    moe_cls = HunYuanMoe


class HunYuanMoeBody(DecoderBody):
    layer_cls = HunYuanMoeLayer


class HunYuanMoeLM(HunYuanLM):
    body_cls = HunYuanMoeBody


FAMILIES = [
    Family(
        "hunyuan_v1_moe",
        HunYuanMoeLM,
        "HunYuan dense with experts (softmax top-k, renormalized) and a shared MLP",
        ("tencent/Hunyuan-A13B-Instruct",),
        rules=HunYuanMoeRules(qk_norm="head", mlp_bias=False),
        category="moe",
    ),
]

"""Mellum: Qwen3-MoE with sliding-window layers (`layer_types`, their own rope per layer type)
and experts in the layers `mlp_layer_types` marks sparse; any MTP layer goes unread."""

import dataclasses

from converter.config import FULL, ConfigReader, Rope, parse_local_rope
from converter.config.moe import MoeConfig, MoeRules
from converter.models.decoder import DecoderLM
from converter.models.moe_layers import mlp_layer_types
from converter.registry import Family


class MellumRules(MoeRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL  # without layer_types, every layer attends fully

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return parse_local_rope(r.raw, head_dim=head_dim)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        sparse = mlp_layer_types(r, cfg.num_hidden_layers)
        return dataclasses.replace(super().moe(r, cfg), sparse_layers=sparse)


FAMILIES = [
    Family(
        "mellum",
        DecoderLM,
        "softmax top-k experts in the `mlp_layer_types` layers; sliding-window layers with "
        "their own rope; per-head q/k RMSNorm",
        ("JetBrains/Mellum2-12B-A2.5B-Base",),
        rules=MellumRules(qk_norm="head"),
        category="moe",
        unused=(r"^mtp\.",),
    ),
]

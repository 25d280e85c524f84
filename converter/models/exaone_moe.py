"""EXAONE MoE (K-EXAONE): pre-norm layers with EXAONE 4's attention (per-head q/k RMSNorm,
sliding-window layers with rope, full ones without positions) whose
MLPs are experts routed as DeepSeek-V3 does (sigmoid scores, a selection-only correction bias
kept beside the router as `mlp.e_score_correction_bias`, grouped top-k, renormalized, scaled);
shared experts in every sparse layer; dense layers by `mlp_layer_types` or the first
`first_k_dense_replace`."""

import dataclasses

from converter.components.moe import SparseMoe
from converter.config import FULL, SLIDING, ConfigReader, Rope
from converter.config.moe import MAX_EXPERTS, MoeConfig
from converter.models.cohere2_moe import dense_prefix, mlp_layer_types
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.glm4_moe import DeepSeekRoutingRules
from converter.registry import Family


class ExaoneMoeRules(DeepSeekRoutingRules):
    def sliding_window(self, r: ConfigReader) -> int | None:
        if r.raw.get("sliding_window") is None:
            r.refuse("sliding_window", "transformers' EXAONE MoE configuration requires a window")
        return super().sliding_window(r)

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        pattern = r.raw.get("sliding_window_pattern")
        if not isinstance(pattern, int) or isinstance(pattern, bool):
            r.refuse(
                "sliding_window_pattern",
                "without 'layer_types' transformers' EXAONE MoE needs an integer pattern",
            )
        return SLIDING if (index + 1) % r.int("sliding_window_pattern") else FULL

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)  # a window is always set: full layers have no positions
        return tuple(rope if kind == SLIDING else None for kind in layer_types)

    def num_experts(self, r: ConfigReader) -> int:
        return r.int("num_experts", hi=MAX_EXPERTS)

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        return mlp_layer_types(r, layers, dense_prefix(r))

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        shared = r.int("num_shared_experts", default=1)  # transformers always builds one
        return dataclasses.replace(moe, correction_bias=False, shared_size=moe.expert_size * shared)


class ExaoneMoe(SparseMoe):
    """The correction bias sits beside the router (`mlp.e_score_correction_bias`)."""

    shared_name = "shared_experts"
    correction_beside_router = True


class ExaoneMoeLayer(DecoderLayer):
    moe_cls = ExaoneMoe


class ExaoneMoeBody(DecoderBody):
    layer_cls = ExaoneMoeLayer


class ExaoneMoeLM(DecoderLM):
    body_cls = ExaoneMoeBody


FAMILIES = [
    Family(
        "exaone_moe",
        ExaoneMoeLM,
        "EXAONE 4's attention (per-head q/k norms, NoPE full layers) in pre-norm layers with "
        "DeepSeek-V3 routing (sigmoid, correction bias, grouped top-k, scaling) and shared "
        "experts; dense first layers",
        ("LGAI-EXAONE/K-EXAONE-236B-A23B",),
        rules=ExaoneMoeRules(qk_norm="head", qkv_bias=False, o_bias=False, mlp_bias=False),
        # the multi-token-prediction module, as transformers skips it
        unused=(r"(.*\.)?mtp\..*",),
        category="moe",
    ),
]

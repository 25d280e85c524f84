"""GLM-4.5 (glm4_moe) and dots.llm1 (dots1). GLM-4.5: Llama with partial rotary, optional
per-head q/k RMSNorm, q/k/v biases and DeepSeek-V3's routing: sigmoid scores, a
selection-only correction bias, the best `topk_group` of `n_group` groups, renormalized and
scaled weights; a shared expert in every sparse layer and dense MLPs in the first
`first_k_dense_replace` layers. dots1 routes the same way on Qwen3's attention (per-head q/k
norms), sliding from layer `max_window_layers` on; Solar Open on Llama's attention (full rotary),
experts in every layer."""

import dataclasses

from converter.components.moe import SparseMoe
from converter.config import FULL, SLIDING, ConfigReader
from converter.config.moe import MAX_EXPERTS, SIGMOID, MoeConfig, MoeRules
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class DeepSeekRoutingRules(MoeRules):
    """DeepSeek-V3's routing keys (noaux_tc): sigmoid scoring with `e_score_correction_bias`,
    `n_group`/`topk_group`, `routed_scaling_factor`, `n_shared_experts` of the expert width."""

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        return dataclasses.replace(
            moe,
            scoring=SIGMOID,
            correction_bias=True,
            groups=r.int("n_group", default=1),
            topk_groups=r.int("topk_group", default=1),
            routed_scaling=r.float("routed_scaling_factor", default=1.0),
            shared_size=moe.expert_size * r.int("n_shared_experts", default=0, lo=0),
        )

    def num_experts(self, r: ConfigReader) -> int:
        if r.raw.get("n_routed_experts") == 0:
            raise ConfigError("'n_routed_experts' = 0: a mixture of experts needs an expert")
        return r.int("n_routed_experts", hi=MAX_EXPERTS)


class Glm4MoeRules(DeepSeekRoutingRules):
    def qk_norm(self, r: ConfigReader) -> str | None:
        return "head" if r.bool("use_qk_norm", False) else None


class Dots1Rules(DeepSeekRoutingRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        if window is None:
            return FULL
        return SLIDING if index >= r.int("max_window_layers", default=0, lo=0) else FULL


class SharedExpertsMoe(SparseMoe):
    shared_name = "shared_experts"


class Glm4MoeLayer(DecoderLayer):
    moe_cls = SharedExpertsMoe


class Glm4MoeBody(DecoderBody):
    layer_cls = Glm4MoeLayer


class Glm4MoeLM(DecoderLM):
    body_cls = Glm4MoeBody


FAMILIES = [
    Family(
        "glm4_moe",
        Glm4MoeLM,
        "DeepSeek-V3 routing (sigmoid, correction bias, grouped top-k, scaling) with shared "
        "experts and dense first layers; partial rotary, optional q/k norm",
        ("zai-org/GLM-4.5-Air",),
        rules=Glm4MoeRules(o_bias=False),
        # the multi-token-prediction layer after the last (GLM-4.5: 92, GLM-4.5-Air: 46), as
        # transformers skips it
        unused=(r"model\.layers\.(92|46)\..*",),
        category="moe",
    ),
    Family(
        "dots1",
        Glm4MoeLM,
        "GLM-4.5's routing and shared experts on Qwen3's attention (per-head q/k norms); "
        "sliding layers from max_window_layers on",
        ("rednote-hilab/dots.llm1.inst",),
        rules=Dots1Rules(qk_norm="head"),
        category="moe",
    ),
    Family(
        "solar_open",
        Glm4MoeLM,
        "GLM-4.5's routing and shared experts in every layer, on Llama's attention",
        ("upstage/Solar-Open-100B",),
        rules=DeepSeekRoutingRules(o_bias=False),
        category="moe",
    ),
]

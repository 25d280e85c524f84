"""Sarvam MoE (sarvam_moe): transformers runs it as GLM-4.5 (Glm4MoeForCausalLM) under its own
configuration, whose differences are defaults (full rotary, q/k norms on) and the original
checkpoints' key spellings (`num_experts`, `num_shared_experts`, `use_qkv_bias`). Its checkpoints
keep Sarvam's tensor names, which transformers renames on load: `word_embeddings`, a fused
`attention.query_key_value` ([q|k|v] rows), `attention.dense`, `query_layernorm` /
`key_layernorm`, and the router's selection bias `mlp.gate.expert_bias`."""

from dataclasses import replace

from onnxscript import nn

from converter.components.attention import Attention
from converter.components.moe import Router, routing_weights
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.glm4_moe import Glm4MoeRules, SharedExpertsMoe
from converter.registry import Family

# SarvamMoEConfig.attribute_map: the spellings of sarvamai/sarvam-30b's config.json
ALIASES = {
    "num_experts": "n_routed_experts",
    "num_local_experts": "n_routed_experts",
    "num_shared_experts": "n_shared_experts",
    "use_qkv_bias": "attention_bias",
}


class SarvamAttention(Attention):
    qkv_proj_name, out_proj_name = "query_key_value", "dense"
    qk_norm_names = ("query_layernorm", "key_layernorm")


class SarvamRouter(Router):
    """The router, its selection-only bias named `expert_bias`."""

    def __init__(self, cfg, dtype):
        super().__init__(replace(cfg, moe=replace(cfg.moe, correction_bias=False)), dtype)
        self.expert_bias = nn.Parameter([cfg.moe.num_experts], dtype)


class SarvamMoe(SharedExpertsMoe):
    router_cls = SarvamRouter

    def route(self, op, router, logits):
        return routing_weights(op, router, logits, self.moe, correction=router.expert_bias)


class SarvamLayer(DecoderLayer):
    attention_cls, moe_cls = SarvamAttention, SarvamMoe
    attention_name = "attention"


class SarvamBody(DecoderBody):
    layer_cls = SarvamLayer
    embedding_name = "word_embeddings"


class SarvamMoeLM(DecoderLM):
    body_cls = SarvamBody


FAMILIES = [
    Family(
        "sarvam_moe",
        SarvamMoeLM,
        "GLM-4.5's model (grouped sigmoid routing, shared experts, dense first layers) with "
        "full rotary and per-head q/k norms by default; Sarvam's tensor names (fused "
        "query_key_value)",
        ("sarvamai/sarvam-30b",),
        rules=Glm4MoeRules(ALIASES, o_bias=False, fused_qkv=True),
        category="moe",
    ),
]

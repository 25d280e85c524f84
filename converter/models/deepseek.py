"""DeepSeek-V2/V3 and their kin: Llama layers whose attention is multi-head latent attention
(components/mla.py) and whose MLPs, from `first_k_dense_replace` on, are routed experts plus
`n_shared_experts` shared ones (`mlp.shared_experts`, `moe_intermediate_size` wide each).

- DeepSeek-V2: interleaved rotary pairs; softmax scores, top-k over all experts (`greedy`) or
  over the `topk_group` groups with the best single expert (`group_limited_greedy`); the picks
  times `routed_scaling_factor`, never renormalized (transformers reads no `norm_topk_prob`).
- DeepSeek-V3 (and SarvamMLA, which transformers runs as it): sigmoid scores, chosen with
  `e_score_correction_bias` added, within the `topk_group` groups whose two best experts sum
  highest (noaux_tc), renormalized per `norm_topk_prob`, times `routed_scaling_factor`;
  `rope_interleave` pairs.
- GLM-4-MoE-Lite: DeepSeek-V3's layers, experts where `mlp_layer_types` says "sparse".
- A.X-K1: DeepSeek-V3 whose expert layers norm their MLP output (`post_mlp_layernorm`),
  experts where `mlp_layer_types` (or its legacy `first_k_dense_replace` / `moe_layer_freq`) says.
- Youtu: DeepSeek-V3's attention in dense Llama layers.
"""

from __future__ import annotations

import dataclasses

from converter.components.embedding import Embedding
from converter.components.mla import GQA_REFUSED, LatentAttention, latent_caches
from converter.components.moe import SparseMoe, routing_weights
from converter.components.norms import make_norm
from converter.config import ConfigReader
from converter.config.mla import MLARules
from converter.config.moe import MAX_EXPERTS, SIGMOID, MoeConfig, MoeRules
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family
from converter.weights import Assembly

_TOPK_METHODS = ("greedy", "group_limited_greedy")


class DeepseekMoe(SparseMoe):
    shared_name = "shared_experts"


class DeepseekV2Moe(DeepseekMoe):
    def route(self, op, router, logits):
        return routing_weights(op, router, logits, self.moe, group_best=1)  # a group's max


class LatentLayer(DecoderLayer):
    attention_cls = LatentAttention


class DeepseekLayer(LatentLayer):
    moe_cls = DeepseekMoe


class DeepseekV2Layer(DeepseekLayer):
    moe_cls = DeepseekV2Moe


class AXK1Layer(DeepseekLayer):
    """The pre-norm layer, with `post_mlp_layernorm` on the output of an expert layer's MLP."""

    def __init__(self, cfg, index: int, dtype, ep):
        super().__init__(cfg, index, dtype, ep)
        sparse = cfg.moe.is_sparse(index)
        self.post_mlp_layernorm = make_norm(cfg, cfg.hidden_size, dtype) if sparse else None

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.input_layernorm(op, x)
        a, key, value = self.self_attn(op, h, kernel, past_key, past_value)
        x = op.Add(x, a)
        m = self.mlp(op, self.post_attention_layernorm(op, x))
        if self.post_mlp_layernorm is not None:
            m = self.post_mlp_layernorm(op, m)
        return op.Add(x, m), key, value


class DeepseekBody(DecoderBody):
    layer_cls = DeepseekLayer
    gqa_refused = GQA_REFUSED


class DeepseekV2Body(DeepseekBody):
    layer_cls = DeepseekV2Layer


class AXK1Body(DeepseekBody):
    layer_cls = AXK1Layer


class DeepseekLM(DecoderLM):
    body_cls = DeepseekBody

    def caches(self):
        return latent_caches(self.cfg)


class DeepseekV2LM(DeepseekLM):
    body_cls = DeepseekV2Body


class LatentRules(MLARules, MoeRules):
    """MLA and experts: rotary pairs per `rope_layout` (None: `rope_interleave` chooses)."""

    def __init__(self, aliases=None, rope_layout: str | None = None, **traits) -> None:
        super().__init__(aliases, rope_layout, **traits)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        shared = r.int("n_shared_experts", hi=MAX_EXPERTS) * moe.expert_size
        routed_scaling = r.float("routed_scaling_factor", default=1.0)
        return dataclasses.replace(moe, shared_size=shared, routed_scaling=routed_scaling)

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        if r.get("moe_layer_freq", default=1) != 1:
            r.refuse(
                "moe_layer_freq",
                "transformers gives every layer from first_k_dense_replace on its experts",
            )
        return super().sparse_layers(r, layers)


class DeepseekV2Rules(LatentRules):
    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        method = r.str("topk_method", default="greedy")
        if method not in _TOPK_METHODS:
            r.refuse("topk_method", f"transformers' DeepSeek-V2 routes by {_TOPK_METHODS}")
        if r.bool("norm_topk_prob", False):
            r.refuse("norm_topk_prob", "transformers' DeepSeek-V2 never renormalizes the picks")
        moe = super().moe(r, cfg)
        if method == "greedy":
            return moe
        groups = r.int("n_group", hi=MAX_EXPERTS)
        return dataclasses.replace(
            moe, groups=groups, topk_groups=r.int("topk_group", hi=MAX_EXPERTS)
        )


class DeepseekV3Rules(LatentRules):
    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = dataclasses.replace(
            super().moe(r, cfg),
            scoring=SIGMOID,
            correction_bias=True,
            groups=r.int("n_group", hi=MAX_EXPERTS),
            topk_groups=r.int("topk_group", hi=MAX_EXPERTS),
        )
        if moe.groups > 1 and moe.num_experts // moe.groups < 2:
            raise ConfigError(
                f"'n_group' = {moe.groups} leaves one expert per group: a group scores the sum "
                "of its two best"
            )
        return moe


def _layer_kinds(kinds, layers: int) -> tuple[bool, ...]:
    """`mlp_layer_types`: per layer, experts ("sparse") or the dense MLP ("dense")."""
    if not isinstance(kinds, list) or len(kinds) != layers or not set(kinds) <= {"dense", "sparse"}:
        raise ConfigError(f"'mlp_layer_types' must list 'dense' or 'sparse' for {layers} layers")
    return tuple(kind == "sparse" for kind in kinds)


class Glm4MoeLiteRules(DeepseekV3Rules):
    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        """`mlp_layer_types` (default: the first layer dense), as transformers reads it; it
        ignores `first_k_dense_replace`, so a config whose count disagrees is refused."""
        kinds = r.raw.get("mlp_layer_types") or ["dense"] + ["sparse"] * (layers - 1)
        sparse = _layer_kinds(kinds, layers)
        leading_dense = next((i for i, s in enumerate(sparse) if s), layers)
        if r.get("first_k_dense_replace", default=leading_dense) != leading_dense:
            r.refuse(
                "first_k_dense_replace", "transformers reads the dense layers from mlp_layer_types"
            )
        return sparse


class AXK1Rules(DeepseekV3Rules):
    def read(self, r: ConfigReader):
        if not r.has("q_lora_rank"):
            r.refuse("q_lora_rank", "A.X-K1's queries always come through q_a_proj / q_b_proj")
        return super().read(r)

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        """`mlp_layer_types`, else (as transformers derives it) the layers from
        `first_k_dense_replace` on whose index `moe_layer_freq` divides."""
        kinds = r.raw.get("mlp_layer_types")
        if kinds is None:
            first = r.int("first_k_dense_replace", default=1, lo=0, hi=layers)
            freq = r.int("moe_layer_freq", default=1)
            return tuple(i >= first and i % freq == 0 for i in range(layers))
        return _layer_kinds(kinds, layers)


class PadZeroedEmbedding(Embedding):
    """The embedding with the `pad_token_id` row zeroed: transformers' Youtu zeroes it when it
    loads a checkpoint (its weight init writes the padding row in place), so its logits, tied
    head included, are those of the zeroed row."""

    def __init__(self, cfg, dtype):
        super().__init__(cfg.vocab_size, cfg.hidden_size, dtype, cfg.embedding_multiplier)
        self.pad = cfg.pad_token_id

    def assemblies(self) -> dict[str, Assembly]:
        if self.pad is None:
            return {}
        pad, shape = self.pad, tuple(self.weight.shape.dims)

        def zero_pad_row(arrays):
            rows = arrays[0].copy()
            rows[pad] = 0
            return rows

        return {self.weight.name: Assembly(((self.weight.name, shape),), zero_pad_row)}


class YoutuBody(DecoderBody):
    layer_cls = LatentLayer
    gqa_refused = GQA_REFUSED

    def make_embedding(self, cfg, dtype):
        return PadZeroedEmbedding(cfg, dtype)


class AXK1LM(DeepseekLM):
    body_cls = AXK1Body


class YoutuLM(DeepseekLM):
    body_cls = YoutuBody


_CATEGORY = "mla"

FAMILIES = [
    Family(
        "deepseek_v2",
        DeepseekV2LM,
        "multi-head latent attention (interleaved rotary pairs); softmax experts, greedy or "
        "group-limited, routed scaling, shared experts, first layers dense",
        ("deepseek-ai/DeepSeek-V2-Lite",),
        rules=DeepseekV2Rules(rope_layout="interleaved"),
        category=_CATEGORY,
    ),
    Family(
        "deepseek_v3",
        DeepseekLM,
        "multi-head latent attention; sigmoid experts with a correction bias, grouped top-k, "
        "routed scaling, shared experts, first layers dense",
        ("deepseek-ai/DeepSeek-V3",),
        rules=DeepseekV3Rules(),
        category=_CATEGORY,
        unused=(r"model\.layers\.61\..*",),  # the released multi-token-prediction layer
    ),
    Family(
        "sarvam_mla",
        DeepseekLM,
        "DeepSeek-V3's layers (transformers runs it as deepseek_v3)",
        ("sarvamai/sarvam-105b",),
        rules=DeepseekV3Rules({"num_shared_experts": "n_shared_experts"}),
        category=_CATEGORY,
    ),
    Family(
        "glm4_moe_lite",
        DeepseekLM,
        "DeepSeek-V3's layers, experts where `mlp_layer_types` says sparse",
        ("zai-org/GLM-4.7-Flash",),
        rules=Glm4MoeLiteRules(),
        category=_CATEGORY,
        unused=(r"model\.layers\.47\..*",),  # the released multi-token-prediction layer
    ),
    Family(
        "axk1",
        AXK1LM,
        "DeepSeek-V3's layers, expert layers norming their MLP output",
        ("skt/A.X-K1",),
        rules=AXK1Rules(),
        category=_CATEGORY,
        # the released checkpoints also store the norm for the dense layers, which skip it
        unused=(r"model\.layers\.\d+\.post_mlp_layernorm\.weight",),
    ),
    Family(
        "youtu",
        YoutuLM,
        "multi-head latent attention in dense Llama layers",
        ("tencent/Youtu-LLM-2B",),
        rules=MLARules(rope_layout=None),
        category=_CATEGORY,
    ),
]

"""LongCat-Flash: each layer runs two latent-attention sublayers (DeepSeek-V3's MLA with its
queries and latent scaled by sqrt(hidden / rank), the "LoRA scaling") and two dense MLPs, and
beside them a shortcut MoE, fed after the first attention, whose output joins the second MLP's
residual sum. The MoE routes over `n_routed_experts` experts plus `zero_expert_num`
zero-computation experts (each the identity): softmax scores, picked with the router's
`e_score_correction_bias` added, never renormalized, times `routed_scaling_factor`.

Caches: one per attention sublayer (transformers' layer_idx * 2 + i), so a layer reads and
writes two (past_key_values.{2i} and .{2i + 1}); `num_hidden_layers` is the sublayer count, as
transformers' config defines it (2 * num_layers).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import make_norm
from converter.components.experts import Experts
from converter.components.mla import GQA_REFUSED, LatentAttention, latent_caches
from converter.components.mlp import GatedMLP
from converter.components.moe import SparseMoe
from converter.components.norms import RMSNorm
from converter.config import ConfigReader
from converter.config.mla import MLAConfig, MLARules
from converter.config.moe import MAX_EXPERTS, MoeConfig, MoeRules
from converter.config.reader import MAX_LAYERS
from converter.execution_providers import MOE, PACKED_GATE_UP, PACKED_QKV, SKIP_NORM
from converter.models.decoder import AttentionKernelChoice, DecoderBody, DecoderLM, attention_spec
from converter.registry import Family

# transformers' LongcatFlashConfig.default_theta, when config.json names no rope theta
_DEFAULT_THETA = 10000000.0
ZERO_EXPERTS_REFUSED = "zero-computation (identity) experts, which the MoE kernel cannot hold"


@dataclass(frozen=True)
class LongcatConfig(MLAConfig):
    zero_experts: int = 0  # the last `zero_experts` of moe.num_experts are identities


class ScaledRMSNorm(RMSNorm):
    """RMSNorm whose output is multiplied by `factor` (the latent's LoRA scaling)."""

    def __init__(self, size: int, eps: float, dtype: ir.DataType, factor: float):
        super().__init__(size, eps, dtype)
        self.factor = factor

    def forward(self, op, x):
        return op.Mul(super().forward(op, x), self.factor)


class LongcatAttention(LatentAttention):
    """Latent attention with queries scaled by sqrt(hidden / q_lora_rank) and the normed
    latent (cached so) by sqrt(hidden / kv_lora_rank)."""

    def __init__(self, cfg, dtype: ir.DataType, spec, packed: bool = False):
        super().__init__(cfg, dtype, spec, packed)
        mla = cfg.mla
        self.q_scale = (cfg.hidden_size / mla.q_lora_rank) ** 0.5
        kv_scale = (cfg.hidden_size / mla.kv_lora_rank) ** 0.5
        self.kv_a_layernorm = ScaledRMSNorm(mla.kv_lora_rank, mla.latent_norm_eps, dtype, kv_scale)

    def _project(self, op, x):
        q, compressed = super()._project(op, x)
        return op.Mul(q, self.q_scale), compressed


class _Classifier(nn.Module):
    keeps_float = True  # not quantized (int4, int8), as Router

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([cfg.moe.num_experts, cfg.hidden_size], dtype)

    def forward(self, op, flat):
        return op.MatMul(flat, op.Transpose(self.weight, perm=[1, 0]))


class LongcatRouter(nn.Module):
    """`classifier` (weight [E + Z, H]) and the selection-only
    `e_score_correction_bias` [E + Z]."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        self.classifier = _Classifier(cfg, dtype)
        self.e_score_correction_bias = nn.Parameter([cfg.moe.num_experts], dtype)

    def forward(self, op, flat):
        return self.classifier(op, flat)


class LongcatMoe(SparseMoe):
    """Routing over the real and the zero experts; the real ones run as `Experts`, a zero
    expert adds its weight times the token."""

    router_name = "router"
    router_cls = LongcatRouter

    def __init__(self, cfg, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        moe = cfg.moe
        self.zero = cfg.zero_experts
        self.real = moe.num_experts - self.zero
        real = dataclasses.replace(moe, num_experts=self.real, top_k=min(moe.top_k, self.real))
        kernel = self.experts.kernel
        self.experts = Experts(dataclasses.replace(cfg, moe=real), dtype, self.layout, kernel)

    def kernel_refused(self, cfg, activation: str) -> str | None:
        if cfg.zero_experts and self.ep.has(MOE):
            return ZERO_EXPERTS_REFUSED
        return super().kernel_refused(cfg, activation)

    def forward(self, op, x):
        if not self.zero:
            return super().forward(op, x)
        flat = op.Reshape(x, [-1, self.hidden])
        weights = self.route(op, self.router, self.router(op, flat))  # [T, E + Z]
        real = op.Slice(weights, [0], [self.real], [1])
        zero = op.Slice(weights, [self.real], [self.moe.num_experts], [1])
        out = self.experts(op, flat, real)
        out = op.Add(out, op.Mul(flat, op.ReduceSum(zero, [-1], keepdims=1)))
        return op.Reshape(out, op.Shape(x))


class LongcatLayer(nn.Module):
    """Two (norm, attention, norm, MLP) sublayers, each reading and writing its own cache, and
    the shortcut MoE on the first MLP's input, added after the second MLP (transformers'
    LongcatFlashDecoderLayer)."""

    def __init__(self, cfg, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.index = index
        attentions = [
            LongcatAttention(cfg, dtype, attention_spec(cfg, 2 * index + i), ep.has(PACKED_QKV))
            for i in (0, 1)
        ]
        self.self_attn = nn.ModuleList(attentions)
        packed = ep.has(PACKED_GATE_UP)
        self.mlps = nn.ModuleList([GatedMLP(cfg, dtype, packed=packed) for _ in (0, 1)])
        self.mlp = LongcatMoe(cfg, dtype, ep)
        norms = [[make_norm(cfg, cfg.hidden_size, dtype) for _ in (0, 1)] for _ in (0, 1)]
        self.input_layernorm = nn.ModuleList(norms[0])
        self.post_attention_layernorm = nn.ModuleList(norms[1])

    def expected_fusions(self, plan) -> dict[str, int]:
        """Every norm reads a residual sum but the first layer's first (the embeddings)."""
        if not plan.has(SKIP_NORM):
            return {}
        return {"skip_norms": 3 + int(self.index > 0)}

    def forward(self, op, x, kernel, pasts):
        presents = []
        shortcut = None
        for i in (0, 1):
            past_key, past_value = pasts[i]
            h = self.input_layernorm[i](op, x)
            a, key, value = self.self_attn[i](op, h, kernel, past_key, past_value)
            presents.append((key, value))
            x = op.Add(x, a)
            h = self.post_attention_layernorm[i](op, x)
            if i == 0:
                shortcut = self.mlp(op, h)
            x = op.Add(x, self.mlps[i](op, h))
        return op.Add(x, shortcut), presents


class LongcatBody(DecoderBody):
    layer_cls = LongcatLayer
    gqa_refused = GQA_REFUSED

    def __init__(self, cfg, dtype: ir.DataType, ep):
        nn.Module.__init__(self)
        self.kernel = AttentionKernelChoice(cfg, ep, dtype, self.gqa_refused)
        self.embed_tokens = self.make_embedding(cfg, dtype)
        layers = [LongcatLayer(cfg, i, dtype, ep) for i in range(cfg.num_hidden_layers // 2)]
        self.layers = nn.ModuleList(layers)
        self.norm = self.make_final_norm(cfg, dtype)

    def forward(self, op, inputs):
        x = self.embed(op, inputs)
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        if len(inputs.past) != 2 * len(self.layers):
            raise ValueError("LongCat-Flash reads two caches per layer")
        presents = []
        for i, layer in enumerate(self.layers):
            x, pair = layer(op, x, kernel, inputs.past[2 * i : 2 * i + 2])
            presents += pair
        return self.norm(op, x), presents


class LongcatLM(DecoderLM):
    body_cls = LongcatBody

    def caches(self):
        return latent_caches(self.cfg)  # one per attention sublayer


class LongcatRules(MLARules, MoeRules):
    config_cls = LongcatConfig

    def __init__(self) -> None:
        super().__init__(
            {"ffn_hidden_size": "intermediate_size"},
            rope_layout="deinterleaved",
            expert_size_keys=("expert_ffn_hidden_size",),
        )

    def read(self, r: ConfigReader):
        layers = r.int("num_layers", hi=MAX_LAYERS // 2)
        if r.has("num_hidden_layers") and r.get("num_hidden_layers") != 2 * layers:
            r.refuse("num_hidden_layers", f"transformers runs 2 * num_layers = {2 * layers}")
        r.raw["num_hidden_layers"] = 2 * layers
        if not r.has("q_lora_rank"):
            r.refuse("q_lora_rank", "LongCat-Flash's queries always come through q_a_proj")
        rope_dim = r.int("qk_rope_head_dim")
        if r.get("head_dim", default=64) != rope_dim:
            r.refuse("head_dim", f"transformers' rotary turns head_dim, so it must be {rope_dim}")
        params = r.raw.get("rope_parameters")
        if not r.has("rope_theta") and not (isinstance(params, dict) and "rope_theta" in params):
            r.raw["rope_theta"] = _DEFAULT_THETA
        cfg = super().read(r)
        zero = r.int("zero_expert_num", default=256, lo=0, hi=MAX_EXPERTS)
        return dataclasses.replace(cfg, zero_experts=zero)

    def num_experts(self, r: ConfigReader) -> int:
        real = r.int("n_routed_experts", default=512, hi=MAX_EXPERTS)
        return real + r.int("zero_expert_num", default=256, lo=0, hi=MAX_EXPERTS)

    def top_k(self, r: ConfigReader) -> int:
        return r.int("moe_topk", default=12, hi=MAX_EXPERTS)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        if r.bool("norm_topk_prob", False):
            r.refuse("norm_topk_prob", "transformers' LongCat-Flash never renormalizes the picks")
        if r.bool("router_bias", False):
            r.refuse("router_bias", "transformers builds the router's bias but never adds it")
        moe = super().moe(r, cfg)
        return dataclasses.replace(
            moe,
            correction_bias=True,
            routed_scaling=r.float("routed_scaling_factor", default=6.0),
        )

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        return (True,) * (layers // 2)  # one shortcut MoE per (two-sublayer) layer


FAMILIES = [
    Family(
        "longcat_flash",
        LongcatLM,
        "two latent-attention sublayers and two dense MLPs per layer beside a shortcut MoE "
        "with zero-computation (identity) experts; LoRA-scaled queries and latent",
        ("meituan-longcat/LongCat-Flash-Chat",),
        rules=LongcatRules(),
        category="mla",
        unused=(
            r"model\.mtp\..*",  # the released multi-token-prediction module
            # gate/up of the zero experts: transformers' gate_up_proj holds E + Z experts' rows
            # (and saves them) but never runs them; a real expert's missing tensor still fails
            r"model\.layers\.\d+\.mlp\.experts\.\d+\.(gate|up)_proj\.weight",
        ),
    ),
]

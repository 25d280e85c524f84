"""Doge: Llama with per-head q/k RMSNorm, residuals scaled per channel (`input_residual`,
`post_attention_residual`) and dynamic-mask attention: each key gets the additive bias
exp(A * softplus(dt_proj(its value))) per kv head, recomputed over the whole cache every step,
and once the keys outnumber `keep_window_size` each query keeps only its that many
best-biased keys. With `is_moe`, the MLP adds cross-domain experts to its gated MLP: one
neuron each (rows of `down_embed` and `up_embed`) picked by product keys, the router logits
split into two halves by the same view transformers takes (which pairs logits of neighbouring
tokens of the whole batch, as transformers does)."""

from __future__ import annotations

import dataclasses
import math

import onnx_ir as ir
from onnxscript import nn

from converter.components.activations import activation
from converter.components.attention import Attention
from converter.components.embedding import Embedding
from converter.components.linear import Linear
from converter.components.masks import _MASKED
from converter.components.mlp import GatedMLP
from converter.config import ArchitectureConfig, ConfigReader, extend
from converter.config.moe import MAX_EXPERTS, MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


@dataclasses.dataclass(frozen=True)
class DogeConfig(ArchitectureConfig):
    keep_window: int = 2048  # keys each query keeps once there are more


class DogeRules(MoeRules):
    def read(self, r: ConfigReader) -> DogeConfig:
        cfg = super().read(r)
        return extend(cfg, DogeConfig, keep_window=r.int("keep_window_size", default=2048))

    def moe(self, r: ConfigReader, cfg) -> MoeConfig | None:
        if not r.bool("is_moe", False):
            return None
        experts = r.int("num_experts", hi=MAX_EXPERTS)
        keys = math.isqrt(experts)  # product keys: experts key_x * keys + key_y
        return MoeConfig(
            num_experts=experts,
            top_k=r.int("num_experts_per_tok", hi=keys * keys),
            expert_size=1,  # an expert is one neuron
            normalize=r.bool("norm_topk_prob", False),
            sparse_layers=(True,) * cfg.num_hidden_layers,
        )


class DogeAttention(Attention):
    """Standard attention whose mask adds each key's dynamic bias (the standard kernel's
    rotary and masks, its own Attention op over the whole cache)."""

    def __init__(self, cfg: DogeConfig, dtype, spec, packed=False):
        super().__init__(cfg, dtype, spec, packed)
        kv_size = spec.kv_heads * spec.head_dim
        self.A = nn.Parameter([spec.kv_heads], dtype)
        self.dt_proj = Linear(kv_size, spec.kv_heads, cfg.qkv_bias, dtype)
        self.keep, self.dtype = cfg.keep_window, dtype

    def forward(self, op, x, kernel, past_key, past_value):
        spec = self.spec
        q, k, v = self._project(op, x)
        q = self._norm(op, self.q_norm, q)
        k = self._norm(op, self.k_norm, k)
        if spec.rope is not None:
            q = kernel.rotate(op, q, spec.heads, spec.rope)
            k = kernel.rotate(op, k, spec.kv_heads, spec.rope)

        def heads_first(t, heads):
            return op.Transpose(op.Reshape(t, [0, 0, heads, spec.head_dim]), perm=[0, 2, 1, 3])

        key = op.Concat(past_key, heads_first(k, spec.kv_heads), axis=2)
        value = op.Concat(past_value, heads_first(v, spec.kv_heads), axis=2)
        # softmax in explicit ops, as transformers' eager attention: a query that sees no key
        # (a left-padded row) weighs all keys alike, where the Attention op outputs zeros; with
        # experts its row reaches its neighbours' routing
        scores = op.MatMul(
            heads_first(q, spec.heads), op.Transpose(self._repeat(op, key), perm=[0, 1, 3, 2])
        )
        scores = op.Add(op.Mul(scores, spec.scale), self._mask(op, kernel, value))
        y = op.MatMul(op.Softmax(scores, axis=-1), self._repeat(op, value))
        y = op.Reshape(op.Transpose(y, perm=[0, 2, 1, 3]), [0, 0, -1])
        return self.o_proj(op, y), key, value

    def _repeat(self, op, t):
        """[B, kv_heads, T, d] -> [B, heads, T, d], query head h reading kv head h // repeat."""
        spec = self.spec
        repeat = spec.heads // spec.kv_heads
        if repeat == 1:
            return t
        t = op.Expand(op.Unsqueeze(t, [2]), op.Constant(value_ints=[1, 1, repeat, 1, 1]))
        return op.Reshape(t, op.Constant(value_ints=[0, spec.heads, -1, spec.head_dim]))

    def _mask(self, op, kernel, value):
        """[batch, heads, sequence, total]: each key's bias where the causal mask lets the
        query see it, masked elsewhere and outside the query's `keep` best."""
        spec = self.spec
        values = op.Reshape(op.Transpose(value, perm=[0, 2, 1, 3]), [0, 0, -1])  # [B, T, kv*d]
        dt = op.Exp(op.Mul(self.A, op.Softplus(self.dt_proj(op, values))))  # [B, T, kv]
        bias = op.Unsqueeze(op.Transpose(dt, perm=[0, 2, 1]), [2, 3])  # [B, kv, 1, 1, T]
        repeat = spec.heads // spec.kv_heads  # query head h reads kv head h // repeat
        bias = op.Expand(bias, op.Constant(value_ints=[1, 1, repeat, 1, 1]))
        bias = op.Reshape(bias, op.Constant(value_ints=[0, spec.heads, 1, -1]))
        causal = kernel.mask(op, spec)  # [B, 1, S, T]: 0 where visible
        masked = op.Constant(value=ir.tensor(_MASKED[self.dtype], dtype=self.dtype))
        mask = op.Where(op.Equal(causal, 0.0), bias, masked)  # [B, heads, S, T]
        total = op.Shape(mask, start=3, end=4)
        keep = op.Min(total, op.Constant(value_ints=[self.keep]))
        _, best = op.TopK(mask, keep, axis=-1, _outputs=2)
        kept = op.ScatterElements(
            op.Mul(mask, 0.0), best, op.Add(op.Mul(op.Cast(best, to=self.dtype), 0.0), 1.0), axis=-1
        )
        return op.Where(op.Equal(kept, 1.0), mask, masked)


class CrossDomainMoe(GatedMLP):
    """The gated MLP (`gate_proj`, `up_proj`, `down_proj`) plus the picked one-neuron experts:
    act(down_embed[e] . x) * weight, times up_embed[e], summed."""

    def __init__(self, cfg, dtype, ep):
        super().__init__(cfg, dtype)
        moe = cfg.moe
        self.moe, self.hidden, self.ep_name = moe, cfg.hidden_size, ep.name
        self.keys = math.isqrt(moe.num_experts)
        self.router_gate = Linear(cfg.hidden_size, 2 * self.keys, False, dtype)
        self.down_embed = Embedding(moe.num_experts, cfg.hidden_size, dtype)
        self.up_embed = Embedding(moe.num_experts, cfg.hidden_size, dtype)
        self.act = cfg.activation

    def fallbacks(self) -> list[str]:
        if self.ep_name == "default":
            return []
        return [
            "experts in standard ops instead of MoE: Doge's experts are single neurons "
            "(embedding rows) picked by product keys, not the kernel's gated MLPs"
        ]

    def forward(self, op, x):
        flat = op.Reshape(x, [-1, self.hidden])  # [N, H]
        halves = op.Reshape(self.router_gate(op, x), [2, -1, self.keys])  # torch's view
        first, second = op.Split(halves, axis=0, num_outputs=2, _outputs=2)
        score_x, key_x = op.TopK(op.Squeeze(first, [0]), [self.keys], axis=-1, _outputs=2)
        score_y, key_y = op.TopK(op.Squeeze(second, [0]), [self.keys], axis=-1, _outputs=2)
        scores = op.Add(op.Unsqueeze(score_x, [2]), op.Unsqueeze(score_y, [1]))
        experts = op.Add(op.Mul(op.Unsqueeze(key_x, [2]), self.keys), op.Unsqueeze(key_y, [1]))
        area = self.keys * self.keys
        scores, experts = op.Reshape(scores, [-1, area]), op.Reshape(experts, [-1, area])
        best, picked = op.TopK(scores, [self.moe.top_k], axis=-1, _outputs=2)
        experts = op.GatherElements(experts, picked, axis=1)  # [N, k]
        weights = op.Softmax(best, axis=-1)
        if self.moe.normalize:
            weights = op.Div(weights, op.ReduceSum(weights, [-1], keepdims=1))
        down = self.down_embed(op, experts)  # [N, k, H]
        up = self.up_embed(op, experts)
        neurons = op.Squeeze(op.MatMul(down, op.Unsqueeze(flat, [2])), [2])  # [N, k]
        neurons = op.Mul(activation(op, self.act, neurons), weights)
        routed = op.Squeeze(op.MatMul(op.Unsqueeze(neurons, [1]), up), [1])  # [N, H]
        return op.Add(super().forward(op, x), op.Reshape(routed, op.Shape(x)))


class DogeLayer(DecoderLayer):
    attention_cls = DogeAttention
    moe_cls = CrossDomainMoe

    def __init__(self, cfg, index, dtype, ep):
        super().__init__(cfg, index, dtype, ep)
        self.input_residual = nn.Parameter([cfg.hidden_size], dtype)
        self.post_attention_residual = nn.Parameter([cfg.hidden_size], dtype)

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.self_attn(
            op, self.input_layernorm(op, x), kernel, past_key, past_value
        )
        x = op.Add(op.Mul(self.input_residual, x), a)
        m = self.mlp(op, self.post_attention_layernorm(op, x))
        return op.Add(op.Mul(self.post_attention_residual, x), m), key, value


class DogeBody(DecoderBody):
    layer_cls = DogeLayer
    gqa_refused = "Doge's dynamic mask adds a bias per key computed from the cached values"


class DogeLM(DecoderLM):
    body_cls = DogeBody


FAMILIES = [
    Family(
        "doge",
        DogeLM,
        "dynamic-mask attention (a per-key bias from the values, top keep_window_size keys), "
        "per-head q/k norms, residuals scaled per channel; optional cross-domain experts "
        "(one-neuron experts picked by product keys) beside the gated MLP",
        ("SmallDoge/Doge-320M",),
        rules=DogeRules(qk_norm="head"),
        category="moe",
    ),
]

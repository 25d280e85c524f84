"""A perceiver resampler (Idefics 2's, and the connectors built like it): `latents` learned rows
attend over the context (an image's features) in `depth` pre-norm layers, each latent's keys and
values being those of the context and of the latents appended to it, then a final RMSNorm. Any
number of context tokens becomes `latents` rows:

  layers.N  input_latents_norm, input_context_norm (RMSNorm) -> self_attn (q from the latents;
            k, v from [context, latents]; fewer key/value heads than query heads) -> residual,
            post_attention_layernorm -> mlp (gate/up/down, no biases) -> residual
  norm      RMSNorm of the last layer's latents
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Linear
from converter.components.mlp import GatedMLP
from converter.components.norms import RMSNorm
from converter.execution_providers import ENCODER_MHA, SKIP_NORM


@dataclass(frozen=True)
class PerceiverSettings:
    hidden_size: int
    latents: int
    depth: int
    heads: int
    head_dim: int
    kv_heads: int
    norm_eps: float
    activation: str
    # what GatedMLP reads: four times the width, no biases, separate gate and up
    mlp_bias: bool = False
    fused_gate_up: bool = False

    @property
    def intermediate_size(self) -> int:
        return 4 * self.hidden_size


class PerceiverAttention(nn.Module):
    def __init__(self, s: PerceiverSettings, dtype: ir.DataType):
        super().__init__()
        inner, kv_inner = s.heads * s.head_dim, s.kv_heads * s.head_dim
        self.q_proj = Linear(s.hidden_size, inner, False, dtype)
        self.k_proj = Linear(s.hidden_size, kv_inner, False, dtype)
        self.v_proj = Linear(s.hidden_size, kv_inner, False, dtype)
        self.o_proj = Linear(inner, s.hidden_size, False, dtype)
        self.s = s

    def forward(self, op, latents, context, kernel):
        s = self.s
        both = op.Concat(context, latents, axis=1)
        q = self.q_proj(op, latents)
        k, v = (self._every_head(op, proj(op, both)) for proj in (self.k_proj, self.v_proj))
        return self.o_proj(op, kernel(op, q, k, v, s.heads, s.head_dim**-0.5))

    def _every_head(self, op, x):
        """Each key/value head repeated for the query heads that share it (transformers'
        repeat_kv order), so both kernels see as many key/value heads as query heads."""
        s = self.s
        repeat = s.heads // s.kv_heads
        if repeat == 1:
            return x
        x = op.Reshape(x, [0, 0, s.kv_heads, 1, s.head_dim])
        x = op.Expand(x, op.Constant(value_ints=[1, 1, 1, repeat, 1]))
        return op.Reshape(x, [0, 0, -1])


class PerceiverLayer(nn.Module):
    def __init__(self, s: PerceiverSettings, dtype: ir.DataType):
        super().__init__()
        self.input_latents_norm = RMSNorm(s.hidden_size, s.norm_eps, dtype)
        self.input_context_norm = RMSNorm(s.hidden_size, s.norm_eps, dtype)
        self.self_attn = PerceiverAttention(s, dtype)
        self.post_attention_layernorm = RMSNorm(s.hidden_size, s.norm_eps, dtype)
        self.mlp = GatedMLP(s, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # post_attention_layernorm reads the attention's residual sum; the next layer's (or the
        # final) latents norm reads the MLP's
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, latents, context, kernel):
        attended = self.self_attn(
            op, self.input_latents_norm(op, latents), self.input_context_norm(op, context), kernel
        )
        latents = op.Add(latents, attended)
        return op.Add(latents, self.mlp(op, self.post_attention_layernorm(op, latents)))


class PerceiverResampler(nn.Module):
    def __init__(self, s: PerceiverSettings, dtype: ir.DataType, ep):
        super().__init__()
        self.latents = nn.Parameter([s.latents, s.hidden_size], dtype)
        self.layers = nn.ModuleList([PerceiverLayer(s, dtype) for _ in range(s.depth)])
        self.norm = RMSNorm(s.hidden_size, s.norm_eps, dtype)
        self.s, self.ep, self.dtype = s, ep, dtype

    def forward(self, op, context, context_mask):
        """context [batch, tokens, hidden] and its mask [batch, tokens] (1 or true: a real
        token) -> [batch, latents, hidden]."""
        batch = op.Shape(context, start=0, end=1)
        latents = op.Expand(self.latents, op.Concat(batch, [1, 1], axis=0))
        count = op.Concat(batch, [self.s.latents], axis=0)
        every_latent = op.Expand(op.Constant(value_int=1), count)
        mask = op.Concat(op.Cast(context_mask, to=ir.DataType.INT64), every_latent, axis=1)
        kernel = encoder_attention(op, self.ep, mask, self.dtype, queries=self.s.latents)
        for layer in self.layers:
            latents = layer(op, latents, context, kernel)
        return self.norm(op, latents)

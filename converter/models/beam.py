"""Beam: sandwich-normed layers (norms before and after attention and the MLP) whose residual
sums are depth-scaled, the n-th sum being x * sqrt((n-1)/n) + h / sqrt(n); attention with
per-head q/k RMSNorm and an output gate (sigmoid of `gate_proj(x)` plus a per-head
`gate_bias`); sliding layers rotate, full layers take no positions but scale queries by
(1 + (position + 1) / 2048) ** 0.1; experts routed as DeepSeek-V3 does (sigmoid, correction
bias, grouped top-k, renormalized, scaled), dense MLPs in the first three layers; a final
logit softcap."""

import math

from onnxscript import nn

from converter.components.attention import Attention
from converter.components.linear import Linear
from converter.config import FULL, SLIDING, ConfigReader, Rope
from converter.config.moe import MAX_EXPERTS
from converter.config.rope import parse_rope
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.glm4_moe import DeepSeekRoutingRules
from converter.models.moe_layers import mlp_layer_types
from converter.registry import Family


class BeamRules(DeepSeekRoutingRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        last = index == r.int("num_hidden_layers") - 1
        return SLIDING if (index + 1) % 6 and not last else FULL

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return self.rope_of_type(r, head_dim, SLIDING)

    def rope_of_type(self, r: ConfigReader, head_dim: int, kind: str) -> Rope | None:
        """The rope of `kind` layers: full layers rotate only where `rope_parameters` gives
        them settings of their own (transformers' default gives them none)."""
        params = r.raw.get("rope_parameters")
        if kind == FULL and not (isinstance(params, dict) and isinstance(params.get(FULL), dict)):
            return None
        return parse_rope(r.raw, head_dim=head_dim, layer_type=kind)

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        ropes = {kind: self.rope_of_type(r, head_dim, kind) for kind in set(layer_types)}
        return tuple(ropes[kind] for kind in layer_types)

    def num_experts(self, r: ConfigReader) -> int:
        return r.int("num_experts", hi=MAX_EXPERTS)

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        return mlp_layer_types(r, layers, min(3, layers))


class BeamAttention(Attention):
    """Queries of layers without rotary scaled by position; the heads' outputs gated."""

    def __init__(self, cfg, dtype, spec, packed=False):
        super().__init__(cfg, dtype, spec, packed)
        self.dtype = dtype
        self.gate_proj = Linear(cfg.hidden_size, spec.heads * spec.head_dim, False, dtype)
        self.gate_bias = nn.Parameter([spec.heads], dtype)

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        q, k, v = self._project(op, x)
        q_name, k_name = self.qk_norm_names
        q = self._norm(op, getattr(self, q_name), q)
        k = self._norm(op, getattr(self, k_name), k)
        if self.spec.rope is None:  # scalable softmax: exp(0.1 * log1p((position + 1) / 2048))
            position = op.Cast(op.Unsqueeze(kernel.position_ids, [2]), to=self.dtype)
            q = op.Mul(
                q, op.Exp(op.Mul(op.Log(op.Add(op.Div(op.Add(position, 1.0), 2048.0), 1.0)), 0.1))
            )
        y, present_key, present_value = kernel(op, q, k, v, past_key, past_value, self.spec)
        return self._output(op, y, x), present_key, present_value

    def _output(self, op, y, x):
        heads, d = self.spec.heads, self.spec.head_dim
        gate = op.Reshape(self.gate_proj(op, x), [0, 0, heads, d])
        gate = op.Sigmoid(op.Add(gate, op.Reshape(self.gate_bias, [heads, 1])))
        y = op.Reshape(op.Mul(op.Reshape(y, [0, 0, heads, d]), gate), [0, 0, heads * d])
        return self.o_proj(op, y)


class BeamLayer(DecoderLayer):
    attention_cls = BeamAttention

    def forward(self, op, x, kernel, past_key, past_value):
        before, after, before_mlp, after_mlp = (
            getattr(self, name) for name in self.layout_norms["sandwich"]
        )
        a, key, value = self.self_attn(op, before(op, x), kernel, past_key, past_value)
        n = 2 * (self.index + 1)
        x = _depth_scaled(op, x, after(op, a), n)
        x = _depth_scaled(op, x, after_mlp(op, self.mlp(op, before_mlp(op, x))), n + 1)
        return x, key, value


def _depth_scaled(op, x, h, n: int):
    """The n-th residual sum of the network: x * sqrt((n - 1) / n) + h / sqrt(n)."""
    return op.Add(op.Mul(h, 1.0 / math.sqrt(n)), op.Mul(x, math.sqrt((n - 1) / n)))


class BeamBody(DecoderBody):
    layer_cls = BeamLayer


class BeamLM(DecoderLM):
    body_cls = BeamBody


FAMILIES = [
    Family(
        "beam",
        BeamLM,
        "sandwich norms with depth-scaled residuals, gated attention with q/k norms, rotary "
        "sliding layers and position-scaled NoPE full layers; DeepSeek-V3 routing; final "
        "logit softcap",
        (),
        rules=BeamRules(layout="sandwich", qk_norm="head"),
        category="moe",
    ),
]

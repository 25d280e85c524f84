"""Self-attention: projections and q/k norms here, the attention op itself in a kernel.

Two kernels implement the same contract: `StandardAttention` (opset-23 RotaryEmbedding +
Attention with an explicit additive mask: portable, any head size, left padding) and
`GroupQueryAttention` (com.microsoft, rotary inside, masks from sequence lengths).
The model picks one per EP; the Attention module does not know which it got.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components.linear import Linear, PackedLinear
from converter.components.masks import alibi_bias, attention_masks
from converter.components.norms import make_norm
from converter.components.rotary import rotary_cos_sin
from converter.config.alibi import Alibi
from converter.config.rope import Rope


@dataclass(frozen=True)
class AttentionSpec:
    """What a layer's attention needs from a kernel besides q, k, v and the cache."""

    heads: int
    kv_heads: int
    head_dim: int
    scale: float
    softcap: float
    window: int | None  # sliding window, None for full attention
    rope: Rope | None
    alibi: Alibi | None = None  # linear position biases (standard kernel only)


class Attention(nn.Module):
    """q/k/v projections (or one fused `qkv_proj`), optional q/k norms, output projection."""

    fused_qkv_name = "qkv_proj"
    out_proj_name = "o_proj"
    qk_norm_names = ("q_norm", "k_norm")

    def __init__(self, cfg, dtype: ir.DataType, spec: AttentionSpec, packed: bool = False):
        super().__init__()
        hidden, d = cfg.hidden_size, cfg.head_dim
        self.spec = spec
        q_size, kv_size = spec.heads * d, spec.kv_heads * d
        self.fused, self.clip = cfg.fused_qkv, cfg.clip_qkv
        if self.fused:
            fused = Linear(hidden, q_size + 2 * kv_size, cfg.qkv_bias, dtype)
            setattr(self, self.fused_qkv_name, fused)
        else:
            parts = [("q_proj", q_size), ("k_proj", kv_size), ("v_proj", kv_size)]
            self.qkv = PackedLinear(parts, hidden, cfg.qkv_bias, dtype, packed)
        setattr(self, self.out_proj_name, Linear(q_size, hidden, cfg.o_bias, dtype))
        self.qk_norm = cfg.qk_norm
        if cfg.qk_norm is not None:
            whole = cfg.qk_norm == "full"
            q_name, k_name = self.qk_norm_names
            setattr(self, q_name, make_norm(cfg, q_size if whole else d, dtype))
            setattr(self, k_name, make_norm(cfg, kv_size if whole else d, dtype))

    def _project(self, op, x):
        if self.fused:
            d, spec = self.spec.head_dim, self.spec
            sizes = [spec.heads * d, spec.kv_heads * d, spec.kv_heads * d]
            qkv = getattr(self, self.fused_qkv_name)(op, x)
            return op.Split(qkv, sizes, axis=-1, _outputs=3)
        return self.qkv(op, x)

    def _norm(self, op, norm, x):
        if self.qk_norm == "full":
            return norm(op, x)
        per_head = norm(op, op.Reshape(x, [0, 0, -1, self.spec.head_dim]))
        return op.Reshape(per_head, [0, 0, -1])

    def forward(self, op, x, kernel, past_key, past_value):
        q, k, v = self._project(op, x)
        if self.qk_norm is not None:
            q_name, k_name = self.qk_norm_names
            q = self._norm(op, getattr(self, q_name), q)
            k = self._norm(op, getattr(self, k_name), k)
        if self.clip is not None:  # after the q/k norms, as OLMoE clamps
            q, k, v = (op.Clip(t, -self.clip, self.clip) for t in (q, k, v))
        y, present_key, present_value = kernel(op, q, k, v, past_key, past_value, self.spec)
        return self._output(op, y, x), present_key, present_value

    def _output(self, op, y, x):
        """The output projection of `y`, the heads' concatenated outputs for the input `x`."""
        return getattr(self, self.out_proj_name)(op, y)


class Rotary:
    """opset-23 RotaryEmbedding with cos/sin per position_ids, one table per rope."""

    def __init__(self, dtype, position_ids):
        self.dtype, self.position_ids = dtype, position_ids
        self.tables: dict[Rope, tuple] = {}

    def __call__(self, op, x, heads: int, rope: Rope):
        if rope not in self.tables:
            self.tables[rope] = rotary_cos_sin(op, self.position_ids, rope, self.dtype)
        cos, sin = self.tables[rope]
        return op.RotaryEmbedding(
            x, cos, sin, interleaved=0, num_heads=heads, rotary_embedding_dim=rope.dim
        )


class StandardAttention:
    """opset-23 RotaryEmbedding + Attention over one additive mask per window size (plus the
    ALiBi bias, per head, when the layer has one)."""

    def __init__(self, op, dtype, tokens, attention_mask, position_ids, windows):
        self.masks = attention_masks(op, attention_mask, tokens, windows, dtype)
        self.rotate = Rotary(dtype, position_ids)
        self.dtype, self.attention_mask = dtype, attention_mask
        self.biased: dict[tuple, object] = {}

    def mask(self, op, spec: AttentionSpec):
        """The additive mask of `spec`'s layer: [batch, 1 or heads, sequence, total]."""
        if spec.alibi is None:
            return self.masks[spec.window]
        key = (spec.window, spec.alibi)
        if key not in self.biased:
            bias = alibi_bias(op, self.attention_mask, spec.alibi, self.dtype)
            self.biased[key] = op.Add(self.masks[spec.window], bias)
        return self.biased[key]

    def __call__(self, op, q, k, v, past_key, past_value, spec: AttentionSpec):
        if spec.rope is not None:
            q = self.rotate(op, q, spec.heads, spec.rope)
            k = self.rotate(op, k, spec.kv_heads, spec.rope)
        return op.Attention(
            q,
            k,
            v,
            self.mask(op, spec),
            past_key,
            past_value,
            q_num_heads=spec.heads,
            kv_num_heads=spec.kv_heads,
            scale=spec.scale,
            softcap=spec.softcap,
            _outputs=3,
        )


class GroupQueryAttention:
    """com.microsoft GroupQueryAttention, with rotary inside (do_rotary=1) when allowed.

    Sequence lengths come from attention_mask; the cos/sin caches are computed in the
    graph for positions 0..total-1, so every rope scaling stays exact. Like the kernel,
    this assumes unpadded or right-padded rows (what onnxruntime-genai feeds). When the
    kernel cannot rotate (`rotary_inside` False), the opset-23 op rotates q and k first.
    `ep` says how its kernel reads local_window_size.
    """

    def __init__(self, op, dtype, attention_mask, position_ids, rotary_inside: bool, ep):
        self.dtype, self.rotary_inside, self.ep = dtype, rotary_inside, ep
        self.rotate = Rotary(dtype, position_ids)
        lengths = op.ReduceSum(attention_mask, [1], keepdims=0)
        self.seqlens_k = op.Cast(op.Sub(lengths, 1), to=ir.DataType.INT32)
        total = op.Shape(attention_mask, start=1, end=2)
        self.total = op.Cast(op.Squeeze(total), to=ir.DataType.INT32)
        self.positions = op.Unsqueeze(op.Range(0, op.Squeeze(total), 1), [0])
        self.caches: dict[Rope, tuple] = {}

    def _cache(self, op, rope: Rope):
        if rope not in self.caches:
            cos, sin = rotary_cos_sin(op, self.positions, rope, self.dtype)
            self.caches[rope] = (op.Squeeze(cos, [0]), op.Squeeze(sin, [0]))
        return self.caches[rope]

    def __call__(self, op, q, k, v, past_key, past_value, spec: AttentionSpec):
        inside = spec.rope is not None and self.rotary_inside
        if spec.rope is not None and not inside:
            q = self.rotate(op, q, spec.heads, spec.rope)
            k = self.rotate(op, k, spec.kv_heads, spec.rope)
        cos, sin = self._cache(op, spec.rope) if inside else (None, None)
        return op.GroupQueryAttention(
            q,
            k,
            v,
            past_key,
            past_value,
            self.seqlens_k,
            self.total,
            cos,
            sin,
            num_heads=spec.heads,
            kv_num_heads=spec.kv_heads,
            scale=spec.scale,
            softcap=spec.softcap,
            local_window_size=self.ep.gqa_local_window_size(spec.window),
            do_rotary=int(inside),
            rotary_interleaved=0,
            _domain="com.microsoft",
            _version=1,
            _outputs=3,
        )

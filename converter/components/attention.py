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
from converter.components.norms import make_norm, per_head
from converter.components.rotary import rotary_cos_sin, stored_cos_sin
from converter.config.alibi import Alibi
from converter.config.rope import Rope
from converter.errors import ConfigError


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

    qkv_proj_name = "qkv_proj"  # the fused projection, when the config has one
    qkv_names = ("q_proj", "k_proj", "v_proj")
    out_proj_name = "o_proj"
    qk_norm_names = ("q_norm", "k_norm")

    def __init__(self, cfg, dtype: ir.DataType, spec: AttentionSpec, packed: bool = False):
        super().__init__()
        hidden, d = cfg.hidden_size, spec.head_dim
        self.spec = spec
        q_size, kv_size = spec.heads * d, spec.kv_heads * d
        self.fused = cfg.fused_qkv
        if self.fused:
            fused = Linear(hidden, q_size + 2 * kv_size, cfg.qkv_bias, dtype)
            setattr(self, self.qkv_proj_name, fused)
        else:
            parts = list(zip(self.qkv_names, (q_size, kv_size, kv_size), strict=True))
            self.qkv = PackedLinear(parts, hidden, cfg.qkv_bias, dtype, packed)
        setattr(self, self.out_proj_name, Linear(q_size, hidden, cfg.o_bias, dtype))
        self.clip = cfg.clip_qkv
        self.sinks = nn.Parameter([spec.heads], dtype) if cfg.attention_sinks else None
        self.qk_norm = cfg.qk_norm
        if cfg.qk_norm is not None:
            q_name, k_name = self.qk_norm_names
            setattr(self, q_name, self.make_qk_norm(cfg, spec.heads, dtype))
            setattr(self, k_name, self.make_qk_norm(cfg, spec.kv_heads, dtype))

    def make_qk_norm(self, cfg, heads: int, dtype: ir.DataType):
        """The norm of q (or k, with `heads` heads): over each head, or the whole projection."""
        size = heads * cfg.head_dim if cfg.qk_norm == "full" else cfg.head_dim
        return make_norm(cfg, size, dtype)

    def _project(self, op, x):
        if self.fused:
            d, spec = self.spec.head_dim, self.spec
            sizes = [spec.heads * d, spec.kv_heads * d, spec.kv_heads * d]
            fused = getattr(self, self.qkv_proj_name)
            return op.Split(fused(op, x), sizes, axis=-1, _outputs=3)
        return self.qkv(op, x)

    def _norm(self, op, norm, x):
        if self.qk_norm == "full":
            return norm(op, x)
        return per_head(op, norm, x, self.spec.head_dim)

    def _joined_qkv(self, op, x, kernel):
        """q, k and v side by side, for a kernel that splits them itself (saves a Split per
        layer); None where this layer transforms them apart or projects them its own way."""
        plain = type(self)._project is Attention._project and self.qk_norm is None
        takes = getattr(kernel, "takes_joined_qkv", None)
        if not plain or self.clip is not None or takes is None or not takes(self.spec):
            return None
        if self.fused:
            return getattr(self, self.qkv_proj_name)(op, x)
        return self.qkv(op, x, split=False) if self.qkv.packed else None

    def forward(self, op, x, kernel, past_key, past_value):
        joined = self._joined_qkv(op, x, kernel)
        if joined is not None:
            y, present_key, present_value = kernel(
                op, joined, None, None, past_key, past_value, self.spec, sinks=self.sinks
            )
            return self._output(op, y, x), present_key, present_value
        q, k, v = self._project(op, x)
        if self.qk_norm is not None:
            q_name, k_name = self.qk_norm_names
            q = self._norm(op, getattr(self, q_name), q)
            k = self._norm(op, getattr(self, k_name), k)
        if self.clip is not None:  # after the q/k norms, as OLMoE clamps
            q, k, v = (op.Clip(t, -self.clip, self.clip) for t in (q, k, v))
        y, present_key, present_value = kernel(
            op, q, k, v, past_key, past_value, self.spec, sinks=self.sinks
        )
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
            x,
            cos,
            sin,
            interleaved=int(rope.interleaved),
            num_heads=heads,
            rotary_embedding_dim=rope.dim,
        )


class StandardAttention:
    """opset-23 RotaryEmbedding + Attention over one additive mask per window size (plus the
    ALiBi bias, per head, when the layer has one); `together` and `window_bounds_together` as
    `attention_masks` reads them."""

    def __init__(
        self,
        op,
        dtype,
        tokens,
        attention_mask,
        position_ids,
        windows,
        together=None,
        window_bounds_together: bool = True,
    ):
        self.position_ids = position_ids
        self.masks = attention_masks(
            op, attention_mask, tokens, windows, dtype, together, window_bounds_together
        )
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

    def __call__(self, op, q, k, v, past_key, past_value, spec: AttentionSpec, sinks=None):
        if spec.rope is not None:
            q = self.rotate(op, q, spec.heads, spec.rope)
            k = self.rotate(op, k, spec.kv_heads, spec.rope)
        if sinks is not None:
            return self._with_sinks(op, q, k, v, past_key, past_value, spec, sinks)
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

    def attend(self, op, q, k, v, spec: AttentionSpec):
        """Attention over heads-first keys and values that already hold the past (the caller
        keeps its own cache): q [batch, heads, seq, d], k [batch, kv_heads, total, d],
        v [batch, kv_heads, total, dv], where dv may differ from d. y: [batch, heads, seq, dv]."""
        return op.Attention(q, k, v, self.mask(op, spec), scale=spec.scale, softcap=spec.softcap)

    def _with_sinks(self, op, q, k, v, past_key, past_value, spec: AttentionSpec, sinks):
        """Attention over one extra key in front: zero (so its score is 0) with a zero value,
        its mask entry the head's sink logit, which so joins the softmax's denominator only."""
        if spec.softcap:
            raise ConfigError("attention sinks with an attention logit softcap are not supported")

        def heads_first(x, heads):
            return op.Transpose(op.Reshape(x, [0, 0, heads, spec.head_dim]), perm=[0, 2, 1, 3])

        present_key = op.Concat(past_key, heads_first(k, spec.kv_heads), axis=2)
        present_value = op.Concat(past_value, heads_first(v, spec.kv_heads), axis=2)
        zero = op.Mul(op.Slice(present_key, [0], [1], [2]), 0.0)  # [batch, kv_heads, 1, dim]
        mask = op.Expand(self.masks[spec.window], [1, spec.heads, 1, 1])
        sink_shape = op.Concat(op.Shape(mask, start=0, end=3), [1], axis=0)
        sink_logits = op.Expand(op.Reshape(sinks, [1, spec.heads, 1, 1]), sink_shape)
        y = op.Attention(
            heads_first(q, spec.heads),
            op.Concat(zero, present_key, axis=2),
            op.Concat(zero, present_value, axis=2),
            op.Concat(sink_logits, mask, axis=3),
            scale=spec.scale,
        )
        y = op.Reshape(op.Transpose(y, perm=[0, 2, 1, 3]), [0, 0, -1])
        return y, present_key, present_value


class GroupQueryAttention:
    """com.microsoft GroupQueryAttention, with rotary inside (do_rotary=1) when allowed.

    Sequence lengths come from attention_mask; the cos/sin caches are stored whole where the
    rope allows it, else computed in the graph for positions 0..total-1, so every rope scaling
    stays exact. Like the kernel, this assumes unpadded or right-padded rows (what
    onnxruntime-genai feeds). When the kernel cannot rotate (`rotary_inside` False), the
    opset-23 op rotates q and k first. `ep` says how its kernel reads local_window_size.
    """

    def __init__(self, op, dtype, attention_mask, position_ids, rotary_inside: bool, ep):
        self.dtype, self.rotary_inside, self.ep = dtype, rotary_inside, ep
        self.position_ids = position_ids
        self.rotate = Rotary(dtype, position_ids)
        lengths = op.ReduceSum(attention_mask, [1], keepdims=0)
        self.seqlens_k = op.Cast(op.Sub(lengths, 1), to=ir.DataType.INT32)
        self.total_i64 = op.Squeeze(op.Shape(attention_mask, start=1, end=2))
        self.total = op.Cast(self.total_i64, to=ir.DataType.INT32)
        self.caches: dict[Rope, tuple] = {}

    def _cache(self, op, rope: Rope):
        if rope not in self.caches:
            stored = stored_cos_sin(op, rope, self.dtype, f"rotary{len(self.caches)}")
            if stored is None:
                positions = op.Unsqueeze(op.Range(0, self.total_i64, 1), [0])
                cos, sin = rotary_cos_sin(op, positions, rope, self.dtype)
                stored = (op.Squeeze(cos, [0]), op.Squeeze(sin, [0]))
            self.caches[rope] = stored
        return self.caches[rope]

    def takes_joined_qkv(self, spec: AttentionSpec) -> bool:
        """Whether q, k and v may come as one tensor (k and v None): unless rotary is applied
        before the kernel."""
        return spec.rope is None or self.rotary_inside

    def __call__(self, op, q, k, v, past_key, past_value, spec: AttentionSpec, sinks=None):
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
            None,  # position_ids
            None,  # attention_bias
            sinks,  # head_sink
            num_heads=spec.heads,
            kv_num_heads=spec.kv_heads,
            scale=spec.scale,
            softcap=spec.softcap,
            local_window_size=self.ep.gqa_local_window_size(spec.window),
            do_rotary=int(inside),
            rotary_interleaved=int(inside and spec.rope.interleaved),
            _domain="com.microsoft",
            _version=1,
            _outputs=3,
        )

"""Conformer blocks over frames x [batch, frames, hidden], with the names transformers' own
Conformers give them (Parakeet, LASR): a half-step feed-forward, self-attention, a convolution
module and a second half-step feed-forward, each after its LayerNorm and added back, then a
final LayerNorm. Families set the attention (`attention_cls`: relative positions or rotary)
and the residual weights; `subsampled_lengths` and `frame_mask` follow each row's frames
through the subsampling convs.

`relative_embeddings` and `relative_scores` (Transformer-XL's relative positions),
`rotary_tables` and `rotate_heads` serve wav2vec2-Conformer's attention too."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.batch_norm import BatchNorm1d
from converter.components.conv import Conv1d
from converter.execution_providers import ENCODER_MHA, SKIP_NORM


def relative_embeddings(op, frames, frequencies: np.ndarray):
    """Sinusoidal embeddings [2 frames - 1, 2 len(frequencies)] of the distances frames - 1
    down to 1 - frames: sin at even channels, cos at odd ones (float32)."""
    distances = op.Sub(op.Sub(frames, 1), op.Range(0, op.Sub(op.Mul(frames, 2), 1), 1))
    angles = op.Mul(
        op.Unsqueeze(op.Cast(distances, to=ir.DataType.FLOAT), [1]), frequencies.tolist()
    )
    pairs = op.Concat(op.Unsqueeze(op.Sin(angles), [2]), op.Unsqueeze(op.Cos(angles), [2]), axis=2)
    return op.Reshape(pairs, [-1, 2 * len(frequencies)])


def inverse_frequencies(size: int, base: float = 10000.0) -> np.ndarray:
    """1 / base^(2i / size) in float32, as torch computes it."""
    exponents = np.arange(0, size, 2, dtype=np.float32) / np.float32(size)
    return (np.float32(1.0) / np.float32(base) ** exponents).astype(np.float32)


def relative_scores(op, q, projected, bias_v, heads: int, head_dim: int):
    """Transformer-XL's position scores [batch, heads, frames, frames] (unscaled): (q + bias_v)
    times `projected`, each distance's embedding projected [2 frames - 1, hidden], shifted so
    (i, j) reads distance i - j."""
    frames = op.Shape(q, start=1, end=2)
    keys = op.Unsqueeze(op.Transpose(op.Reshape(projected, [0, heads, head_dim]), [1, 2, 0]), [0])
    queries = op.Transpose(op.Reshape(q, [0, 0, heads, head_dim]), perm=[0, 2, 1, 3])
    scores = op.MatMul(op.Add(queries, op.Unsqueeze(bias_v, [1])), keys)
    # the shift: a zero column before distance frames - 1, rows re-cut one step later
    padded = op.Pad(scores, [0, 0, 0, 1, 0, 0, 0, 0])
    rows = op.Reshape(padded, op.Concat([0, 0, -1], frames, axis=0))
    shifted = op.Reshape(op.Slice(rows, [1], [2**62], [2]), op.Concat([0, 0], frames, [-1], axis=0))
    return op.Slice(shifted, [0], frames, [3])


def rotary_tables(op, frames, head_dim: int, base: float):
    """cos and sin [1, frames, 1, head_dim] of each frame's angles (halves repeated)."""
    frame = op.Unsqueeze(op.Cast(op.Range(0, frames, 1), to=ir.DataType.FLOAT), [1])
    angles = op.Mul(frame, inverse_frequencies(head_dim, base).tolist())
    angles = op.Unsqueeze(op.Concat(angles, angles, axis=1), [0, 2])
    return op.Cos(angles), op.Sin(angles)


def rotate_heads(op, x, cos, sin, heads: int, head_dim: int):
    """x [batch, frames, heads * head_dim] rotated per head (halves, as transformers rotates)."""
    per_head = op.Reshape(x, [0, 0, heads, head_dim])
    first, second = op.Split(per_head, axis=-1, num_outputs=2, _outputs=2)
    rotated = op.Concat(op.Neg(second), first, axis=-1)
    return op.Reshape(op.Add(op.Mul(per_head, cos), op.Mul(rotated, sin)), [0, 0, -1])


class ConformerAttention(nn.Module):
    """The projections every variant has; by itself rotary attention, q and k rotated by
    `positions` (cos, sin from `rotary_tables`)."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        size, bias = cfg.hidden_size, cfg.attention_bias
        self.q_proj = Linear(size, size, bias, dtype)
        self.k_proj = Linear(size, size, bias, dtype)
        self.v_proj = Linear(size, size, bias, dtype)
        self.o_proj = Linear(size, size, bias, dtype)
        self.heads, self.head_dim = cfg.num_attention_heads, cfg.head_dim

    def forward(self, op, x, kernel, positions):
        heads, size = self.heads, self.head_dim
        q = rotate_heads(op, self.q_proj(op, x), *positions, heads, size)
        k = rotate_heads(op, self.k_proj(op, x), *positions, heads, size)
        return self.o_proj(op, kernel(op, q, k, self.v_proj(op, x), heads, size**-0.5))


class RelativePositionAttention(ConformerAttention):
    """Transformer-XL attention: content scores of (q + bias_u) and k, plus position scores of
    (q + bias_v) and the projected embedding of each distance (`positions`), shifted."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        size = cfg.hidden_size
        self.relative_k_proj = Linear(size, size, False, dtype)
        self.bias_u = nn.Parameter([self.heads, self.head_dim], dtype)
        self.bias_v = nn.Parameter([self.heads, self.head_dim], dtype)

    def forward(self, op, x, kernel, positions):
        q, k, v = self.q_proj(op, x), self.k_proj(op, x), self.v_proj(op, x)
        scale = self.head_dim**-0.5
        projected = self.relative_k_proj(op, positions)
        scores = relative_scores(op, q, projected, self.bias_v, self.heads, self.head_dim)
        bias = op.Mul(scores, scale)
        q = op.Add(q, op.Reshape(self.bias_u, [-1]))
        return self.o_proj(op, kernel(op, q, k, v, self.heads, scale, bias))


def subsampled_lengths(op, lengths, kernel: int, stride: int, padding: int = 0):
    """Each row's frame count (int64 [batch]) after a conv over time, floored as torch does."""
    shrunk = op.Cast(op.Add(lengths, 2 * padding - kernel), to=ir.DataType.FLOAT)
    return op.Add(op.Cast(op.Floor(op.Div(shrunk, float(stride))), to=ir.DataType.INT64), 1)


def frame_mask(op, x, lengths, axis: int = 1):
    """[batch, frames] True on the frames (x's `axis`) before each row's length."""
    count = op.Squeeze(op.Shape(x, start=axis, end=axis + 1), [0])
    return op.Less(op.Unsqueeze(op.Range(0, count, 1), [0]), op.Unsqueeze(lengths, [1]))


class ConformerFeedForward(nn.Module):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        self.linear1 = Linear(cfg.hidden_size, cfg.intermediate_size, cfg.attention_bias, dtype)
        self.linear2 = Linear(cfg.intermediate_size, cfg.hidden_size, cfg.attention_bias, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.linear2(op, activation(op, self.act, self.linear1(op, x)))


class ConformerConvolution(nn.Module):
    """Pointwise conv to twice the width, GLU, the dropped frames zeroed, depthwise conv
    (torch's "same" padding: an even kernel's extra frame on the right), BatchNorm, the
    activation, pointwise conv back."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        size, kernel, bias = cfg.hidden_size, cfg.conv_kernel_size, cfg.convolution_bias
        self.pointwise_conv1 = Conv1d(size, 2 * size, 1, dtype, bias=bias)
        self.depthwise_conv = Conv1d(size, size, kernel, dtype, groups=size, bias=bias)
        self.norm = BatchNorm1d(size, dtype)
        self.pointwise_conv2 = Conv1d(size, size, 1, dtype, bias=bias)
        self.pads = [(kernel - 1) // 2, kernel // 2]
        self.act = cfg.activation

    def forward(self, op, x, keep):
        """`keep`: [batch, 1, frames] 1 on the frames the mask keeps, else 0."""
        x = self.pointwise_conv1(op, op.Transpose(x, perm=[0, 2, 1]))
        values, gates = op.Split(x, axis=1, num_outputs=2, _outputs=2)
        x = op.Mul(op.Mul(values, op.Sigmoid(gates)), keep)
        x = self.depthwise_conv(op, op.Pad(x, [0, 0, self.pads[0], 0, 0, self.pads[1]]))
        x = activation(op, self.act, self.norm(op, x))
        return op.Transpose(self.pointwise_conv2(op, x), perm=[0, 2, 1])


class ConformerBlock(nn.Module):
    """x = a x + b ff1(norm(x)); x += attention(norm(x)); x = c x + d conv(norm(x));
    x = a x + b ff2(norm(x)); norm_out(x), with (a, b) = `feed_forward_weights` and (c, d) =
    `conv_weights` (Parakeet: (1, 0.5) and (1, 1))."""

    attention_cls = RelativePositionAttention
    convolution_cls = ConformerConvolution

    def __init__(self, cfg, dtype: ir.DataType, feed_forward_weights, conv_weights):
        super().__init__()
        size, eps, bias = cfg.hidden_size, cfg.norm_eps, cfg.norm_bias
        self.feed_forward1 = ConformerFeedForward(cfg, dtype)
        self.self_attn = self.attention_cls(cfg, dtype)
        self.conv = self.convolution_cls(cfg, dtype)
        self.feed_forward2 = ConformerFeedForward(cfg, dtype)
        self.norm_feed_forward1 = LayerNorm(size, eps, dtype, bias=bias)
        self.norm_self_att = LayerNorm(size, eps, dtype, bias=bias)
        self.norm_conv = LayerNorm(size, eps, dtype, bias=bias)
        self.norm_feed_forward2 = LayerNorm(size, eps, dtype, bias=bias)
        self.norm_out = LayerNorm(size, eps, dtype, bias=bias)
        self.feed_forward_weights, self.conv_weights = feed_forward_weights, conv_weights

    def expected_fusions(self, plan) -> dict[str, int]:
        # every norm but the first reads a residual sum
        return {
            "skip_norms": 4 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, positions, keep):
        """`positions`: what the attention reads; `keep`: [batch, 1, frames], 1 on kept frames."""
        halves = self.feed_forward_weights
        x = _weighted_sum(op, x, self.feed_forward1(op, self.norm_feed_forward1(op, x)), halves)
        x = op.Add(x, self.self_attn(op, self.norm_self_att(op, x), kernel, positions))
        conv = self.conv(op, self.norm_conv(op, x), keep)
        x = _weighted_sum(op, x, conv, self.conv_weights)
        x = _weighted_sum(op, x, self.feed_forward2(op, self.norm_feed_forward2(op, x)), halves)
        return self.norm_out(op, x)


def _weighted_sum(op, x, update, weights):
    residual, scale = weights
    x = x if residual == 1 else op.Mul(x, residual)
    return op.Add(x, update if scale == 1 else op.Mul(update, scale))

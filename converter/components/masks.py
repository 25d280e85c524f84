"""Additive attention masks: causal, padding and sliding window in one tensor.

A large finite negative (not -inf) keeps fully padded query rows finite, so a
left-padded batch never turns a cache entry into NaN.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.config.alibi import Alibi

_MASKED = {
    ir.DataType.FLOAT: float(np.finfo(np.float32).min),
    ir.DataType.FLOAT16: float(np.finfo(np.float16).min),
    ir.DataType.BFLOAT16: -3.3895313892515355e38,
}


def attention_masks(
    op,
    attention_mask,
    tokens,
    windows,
    dtype: ir.DataType,
    together=None,
    window_bounds_together: bool = True,
) -> dict:
    """{window: mask [batch, 1, sequence, total_sequence]} for each window (None = full);
    `tokens` (ids or embeddings, sequence on axis 1) gives the new sequence length.
    `together` (bool, broadcast to [batch, 1, sequence, total_sequence]): the pairs that may
    attend each other whatever their order (a VLM's image or prefix block), bounded by a
    sliding window too unless `window_bounds_together` is False; padding applies to all."""
    total = op.Shape(attention_mask, start=1, end=2)
    seq = op.Shape(tokens, start=1, end=2)
    past = op.Sub(total, seq)
    keys = op.Range(0, op.Squeeze(total), 1)  # [T]
    queries = op.Unsqueeze(op.Range(op.Squeeze(past), op.Squeeze(total), 1), [1])  # [S, 1]
    distance = op.Sub(queries, keys)  # [S, T]: query index - key index
    causal = op.GreaterOrEqual(distance, 0)
    if together is not None and window_bounds_together:
        causal = op.Or(causal, together)
    padding = op.Unsqueeze(op.Cast(attention_mask, to=ir.DataType.BOOL), [1, 2])  # [B,1,1,T]
    zero = op.Constant(value=ir.tensor(0.0, dtype=dtype))
    masked = op.Constant(value=ir.tensor(_MASKED[dtype], dtype=dtype))
    masks = {}
    for window in windows:
        allowed = causal if window is None else op.And(causal, op.Less(distance, window))
        if together is not None and not window_bounds_together:
            allowed = op.Or(allowed, together)
        masks[window] = op.Where(op.And(allowed, padding), zero, masked)
    return masks


def alibi_bias(op, attention_mask, alibi: Alibi, dtype: ir.DataType):
    """ALiBi bias [batch, heads, 1, total_sequence] from each key's position, counted from the
    row's first real token (left padding included), as transformers counts it."""
    f32 = ir.DataType.FLOAT
    positions = op.Mul(op.Sub(op.CumSum(attention_mask, 1), 1), attention_mask)
    positions = op.Unsqueeze(op.Cast(positions, to=f32), [1, 2])  # [B, 1, 1, T]
    slopes = op.Constant(value=ir.tensor(np.asarray(alibi.slopes, np.float32).reshape(-1, 1, 1)))
    if alibi.bfloat16:
        slopes = _round_to_bfloat16(op, slopes)
    bias = op.Mul(slopes, positions)
    if alibi.bfloat16:
        bias = _round_to_bfloat16(op, bias)
    if alibi.scale != 1.0:
        bias = op.Mul(bias, alibi.scale)
    return bias if dtype == f32 else op.Cast(bias, to=dtype)


def _round_to_bfloat16(op, x):
    return op.Cast(op.Cast(x, to=ir.DataType.BFLOAT16), to=ir.DataType.FLOAT)


def static_masks(op, write_indices, tokens, max_seq_len: int, windows, dtype) -> dict:
    """{window: mask [batch, 1, sequence, max_seq_len]} over fixed-size caches: row b's new
    tokens sit at slots write_indices[b] onwards, and each sees the slots up to its own (those
    within the window); `tokens` (sequence on axis 1) gives the new sequence length."""
    seq = op.Squeeze(op.Shape(tokens, start=1, end=2))
    slots = op.Add(op.Unsqueeze(write_indices, [1]), op.Range(0, seq, 1))  # [B, S]
    distance = op.Sub(op.Unsqueeze(slots, [2]), op.Range(0, max_seq_len, 1))  # [B, S, M]
    causal = op.GreaterOrEqual(distance, 0)
    zero = op.Constant(value=ir.tensor(0.0, dtype=dtype))
    masked = op.Constant(value=ir.tensor(_MASKED[dtype], dtype=dtype))
    masks = {}
    for window in windows:
        allowed = causal if window is None else op.And(causal, op.Less(distance, window))
        masks[window] = op.Unsqueeze(op.Where(allowed, zero, masked), [1])
    return masks

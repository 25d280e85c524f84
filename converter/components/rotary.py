"""Rotary cos/sin tables: computed in the graph from position_ids, or stored whole.

Computing them per position keeps the graph valid at any length and lets the scalings that
depend on the sequence length (dynamic NTK, LongRoPE's short/long switch) be expressed
exactly. GroupQueryAttention reads a table indexed by position; where the frequencies do not
depend on the length, `stored_cos_sin` holds it as initializers, so a decode step does not
recompute every position up to the current one.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.config.rope import Rope


def _const(op, array: np.ndarray):
    return op.Constant(value=ir.tensor(np.asarray(array, dtype=np.float32)))


def _inverse_frequencies(op, rope: Rope, seq_len):
    if rope.kind == "longrope":
        short, long = _const(op, rope.inv_freq()), _const(op, rope.inv_freq(long=True))
        threshold = rope.original_max_position_embeddings or rope.max_position_embeddings
        return op.Where(op.Greater(seq_len, float(threshold)), long, short)
    if rope.kind == "dynamic":
        # NTK-aware base growth; equals the plain base until seq_len passes the trained length.
        trained = float(rope.max_position_embeddings)
        length = op.Max(seq_len, trained)
        growth = op.Sub(op.Div(op.Mul(length, rope.factor), trained), rope.factor - 1.0)
        base = op.Mul(op.Pow(growth, rope.dim / (rope.dim - 2)), rope.theta)
        exponents = _const(op, np.arange(0, rope.dim, 2, dtype=np.float32) / rope.dim)
        return op.Reciprocal(op.Pow(base, exponents))
    return _const(op, rope.inv_freq())


# positions a stored table may hold (128k: 64 MB for 64 frequencies in f32); longer contexts
# compute the table in the graph
STORED_POSITIONS = 131072


def stored_cos_sin(op, rope: Rope, dtype: ir.DataType, name: str):
    """cos and sin for the rope's positions (max_position_embeddings, or the original length
    times the factor of a scaled rope, whichever is more) as [positions, rotary_dim / 2]
    initializers `{name}.cos_cache` and `{name}.sin_cache` in `dtype`, or None where the table
    must be computed per step (frequencies that depend on the length, multimodal rows, or more
    positions than STORED_POSITIONS)."""
    length_dependent = rope.kind in ("dynamic", "longrope") or rope.mrope_section is not None
    # a scaled rope reaches its original length times its factor (Qwen2.5's YaRN configs keep
    # max_position_embeddings at the original 32k)
    scaled = int((rope.original_max_position_embeddings or 0) * rope.factor)
    length = max(rope.max_position_embeddings, scaled)
    if length_dependent or length > STORED_POSITIONS:
        return None
    positions = np.arange(length, dtype=np.float32)
    freqs = np.outer(positions, rope.inv_freq().astype(np.float32))  # f32, as in the graph
    cos, sin = np.cos(freqs), np.sin(freqs)
    if rope.reverse:
        sin = -sin
    scaling = np.float32(rope.attention_scaling())
    numpy_dtype = ir.DataType(dtype).numpy()
    return tuple(
        op.initializer(ir.tensor((table * scaling).astype(numpy_dtype)), f"{name}.{part}_cache")
        for table, part in ((cos, "cos"), (sin, "sin"))
    )


def rotary_cos_sin(op, position_ids, rope: Rope, dtype: ir.DataType):
    """cos and sin of shape [batch, sequence, rotary_dim / 2] in `dtype`; with multimodal rope
    `position_ids` is [3, batch, sequence] and each frequency section takes its row's angles."""
    positions = op.Cast(position_ids, to=ir.DataType.FLOAT)
    seq_len = op.Add(op.ReduceMax(positions, keepdims=0), 1.0)
    freqs = op.Mul(op.Unsqueeze(positions, [-1]), _inverse_frequencies(op, rope, seq_len))
    if rope.mrope_section is not None:
        freqs = _mrope_rows(op, freqs, rope)
    cos, sin = op.Cos(freqs), op.Sin(freqs)
    if rope.reverse:
        sin = op.Neg(sin)
    scaling = rope.attention_scaling()
    if scaling != 1.0:
        cos, sin = op.Mul(cos, scaling), op.Mul(sin, scaling)
    if dtype != ir.DataType.FLOAT:
        cos, sin = op.Cast(cos, to=dtype), op.Cast(sin, to=dtype)
    return cos, sin


def _mrope_rows(op, freqs, rope: Rope):
    """[3, batch, sequence, dim / 2] -> [batch, sequence, dim / 2]: each frequency from the
    position row its section (or, interleaved, its place) assigns it."""
    sections = rope.mrope_section
    if not rope.mrope_interleaved:
        parts = op.Split(freqs, list(sections), axis=-1, _outputs=len(sections))
        return op.Concat(*[op.Gather(s, i % 3, axis=0) for i, s in enumerate(parts)], axis=-1)
    half = sum(sections)
    row = np.zeros(half, dtype=np.int64)
    for axis in (1, 2):
        row[axis : min(3 * sections[axis], half) : 3] = axis
    time, height, width = (op.Gather(freqs, i, axis=0) for i in range(3))
    picked = op.Where(op.Constant(value=ir.tensor(row == 2)), width, time)
    return op.Where(op.Constant(value=ir.tensor(row == 1)), height, picked)

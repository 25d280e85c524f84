"""Per-output-channel symmetric 8-bit weights, for dynamic int8 MatMuls.

A Linear weight in Hugging Face layout ``W[N, K]`` (out_features, in_features) gets one scale per
output channel (row) ``scale[n] = max|W[n]| / LIMIT`` and codes ``q = round(W / scale)`` in
``-LIMIT..LIMIT``, stored as ``MatMulInteger``'s right-hand side: int8 ``[K, N]``, no zero point
(symmetric: the default 0). Every value is within ``scale / 2`` of ``q * scale``; an all-zero row
gets scale 0 and codes 0.

``LIMIT`` is 64, not 127. At run time the activations reach ``MatMulInteger`` as uint8
(``DynamicQuantizeLinear`` has no other output type), and onnxruntime's uint8 x int8 kernels on
x86 CPUs without VNNI (SSE4.1, AVX2, AVX-512 before VNNI) multiply with VPMADDUBSW, which adds
each pair of neighbouring products in int16 with saturation (onnxruntime PR #12088 describes
it; its quantizer's ``reduce_range`` avoids it the same way): ``2 * 255 * 64 = 32640`` fits in
int16, ``2 * 255 * 127`` does not. A package is made for machines nobody has seen, so weights
keep 7 bits and give the same sums on every CPU. All arithmetic is float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

LIMIT = 64  # codes are -LIMIT..LIMIT; see the module docstring

# Rows are quantized in chunks of about this many values, so float32 temporaries stay small.
_CHUNK_VALUES = 1 << 18
_TINY = np.float32(np.finfo(np.float32).tiny)  # smaller scales would overflow 1 / scale


@dataclass(frozen=True)
class Q8Weight:
    """One weight quantized to 8 bits per output channel, in ``MatMulInteger`` layout."""

    values: np.ndarray  # int8 [K, N]
    scales: np.ndarray  # float32 [N]

    def dequantize(self) -> np.ndarray:
        """float32 [N, K]: ``q * scale``, the weight the int8 MatMul multiplies by."""
        return self.values.T.astype(np.float32) * self.scales[:, None]


def quantize_q8(weight: np.ndarray) -> Q8Weight:
    """Quantize ``weight`` [N, K] (any float dtype, memory maps and transposed views included)
    per row."""
    if weight.ndim != 2 or 0 in weight.shape:
        raise ValueError(f"expected a non-empty 2-D [N, K] weight, got shape {weight.shape}")
    if not np.issubdtype(weight.dtype, np.floating) and weight.dtype != ml_dtypes.bfloat16:
        raise ValueError(f"expected a floating-point weight, got {weight.dtype}")
    n, k = weight.shape
    values = np.empty((k, n), np.int8)
    scales = np.empty(n, np.float32)
    rows = max(1, _CHUNK_VALUES // k)
    for start in range(0, n, rows):
        part = slice(start, start + rows)
        block = np.array(weight[part], dtype=np.float32)  # a copy: worked on in place
        scale = np.abs(block).max(axis=1) / np.float32(LIMIT)
        if not np.isfinite(scale).all():
            raise ValueError("weight contains NaN or infinite values")
        inverse = np.zeros_like(scale)
        np.divide(1, scale, out=inverse, where=scale >= _TINY)
        block *= inverse[:, None]
        np.rint(block, out=block)
        np.clip(block, -LIMIT, LIMIT, out=block)
        values[:, part] = block.T
        scales[part] = scale
    return Q8Weight(values, scales)

"""Block-wise weight quantization to 4 or 8 bits: round-to-nearest (RTN) or a per-block scale
search.

A Linear weight in Hugging Face layout ``W[N, K]`` (out_features, in_features) is split along K
into blocks of ``block_size`` values; each block gets one scale (and, when asymmetric, one zero
point) and every value becomes a code ``q`` in 0..2^bits-1 with ``w ~ (q - zero_point) * scale``.
The formulas below are for 4 bits; 8 bits replace 7, 8 and 15 by 127, 128 and 255.

Two encodings of the same codes:

* :class:`BlockWeight` holds the ``com.microsoft.MatMulNBits`` inputs: ``B`` uint8
  ``[N, n_blocks, block_size * bits / 8]`` (4 bits: two codes per byte, the even K index in the
  low nibble; K is zero-padded up to a whole block), ``scales [N, n_blocks]`` and, when
  asymmetric, ``zero_points`` (4 bits: ``[N, ceil(n_blocks / 2)]``, block ``2j`` in the low
  nibble; 8 bits: ``[N, n_blocks]``). Symmetric weights carry no zero points: the kernel's
  default is 2^(bits-1).
* :func:`to_dequantize_linear` gives the standard-ONNX form for the portable graph,
  ``MatMul(x, DequantizeLinear(values, scales, zero_points, axis=0, block_size=block_size))``.

Scale choices:

* symmetric: ``scale = w_extreme / -8``, ``w_extreme`` the block's value of largest magnitude
  (sign kept; the scale is negative when it is positive), codes ``clip(8 + round(w / scale),
  0, 15)``: the extreme lands exactly on code 0 and all 16 levels are used, as llama.cpp's Q4_0
  and onnxruntime's quantizer do. Values on the extreme's side are within ``|scale| / 2`` of
  their reconstruction; the other side reaches 7 steps, so a value there beyond them is clipped
  by up to one step. Measured on the trained tiny Llama's projections this leaves 0.89x the RMS
  error of ``max|w| / 7`` (15 levels, error bounded by half a step everywhere), and the
  package's logits are closer to f32 (docs/validation.md).
* asymmetric: the block range is widened to contain 0 (so zero padding and exact zeros stay exact
  and the zero point always lands in 0..15), ``scale = (max - min) / 15``,
  ``zero_point = clip(round(-min / scale), 0, 15)``; error again at most ``scale / 2``.

All-zero blocks get scale 0 and reconstruct to exact zeros. All arithmetic is float32.

Methods (:data:`METHODS`): ``"rtn"`` keeps the scales above. ``"search"`` (needs no calibration
data) tries, per block, the RTN scale times each factor of :data:`SEARCH_FACTORS` (the zero point
stays RTN's), keeps the candidate whose codes reconstruct the block with the least squared error,
then refits the scale to those codes by least squares (``sum(w * c) / sum(c * c)``, ``c`` the
codes minus the zero point), which can only lower the error again. Factors below 1 clip the
extremes to spend the levels on the bulk of the block. RTN's own candidate (factor 1) is among
them, so no block ends up worse than RTN's. The codes, zero points and packing are RTN's
encoding, so every kernel reads them unchanged.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from numpy.typing import DTypeLike

from converter.errors import WeightsError

BLOCK_SIZES = (16, 32, 64, 128)
BITS = (4, 8)
METHODS = ("rtn", "search")
DEFAULT_METHOD = "rtn"
# the search's candidate scales, as multiples of the RTN scale (see the module doc)
SEARCH_FACTORS = (1.0, 0.95, 7 / 8, 0.8, 0.75, 0.7)
DEQUANTIZE_LINEAR_AXIS = 0  # the blocked axis of to_dequantize_linear's [K, N] values

# Rows are quantized in chunks of about this many values so that the float32 temporaries stay
# a few MB (and peak memory near the output size) instead of several copies of the tensor,
# while numpy's fixed cost per call (~20 us per chunk in all) stays small. Measured on a
# 0.5B-shaped build (docs/benchmarks.md): 2^19 beats 2^18 and 2^17 (hand-offs of the GIL).
_CHUNK_VALUES = 1 << 19
# Chunks are quantized on this many threads: numpy releases the GIL inside each operation, and
# the package writer's threads mostly wait on one tensor's quantization (its packed values and
# scales are written by different threads but computed once). One pool serves every call: a
# pool per call let the writer's threads run twice as many quantizing threads as cores, which
# measured slower (they queue for the GIL between numpy's operations).
_WORKERS = min(2, os.cpu_count() or 1)
_TINY = np.float32(np.finfo(np.float32).tiny)  # smaller scales would overflow 1 / scale
_ITEM = 16  # bytes per item of _quantize_rows' transposing copy; divides every block's bytes


@dataclass(frozen=True)
class BlockWeight:
    """One weight quantized to `bits` bits, in ``com.microsoft.MatMulNBits`` layout."""

    packed: np.ndarray  # uint8 [N, n_blocks, block_size * bits / 8]
    scales: np.ndarray  # float32 [N, n_blocks]
    zero_points: np.ndarray | None  # uint8 (see the module doc); None: symmetric
    k: int  # original K (in_features) before padding to whole blocks
    block_size: int
    bits: int = 4

    @property
    def symmetric_zero_point(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def n(self) -> int:
        return self.packed.shape[0]

    @property
    def n_blocks(self) -> int:
        return self.packed.shape[1]

    def codes(self) -> np.ndarray:
        """The unpacked codes, uint8 [N, n_blocks, block_size]."""
        return _unpack_nibbles(self.packed) if self.bits == 4 else self.packed

    def zero_point_codes(self) -> np.ndarray:
        """The per-block zero points, uint8 [N, n_blocks] (2^(bits-1) when symmetric)."""
        if self.zero_points is None:
            return np.full((self.n, self.n_blocks), self.symmetric_zero_point, np.uint8)
        if self.bits == 8:
            return self.zero_points
        return _unpack_nibbles(self.zero_points)[:, : self.n_blocks]

    def dequantize(self, scale_dtype: DTypeLike = np.float32) -> np.ndarray:
        """float32 [N, K]: ``(q - zero_point) * scale``, the values the kernel multiplies by.

        ``scale_dtype`` is the dtype the graph stores the scales in (the activation dtype): the
        scales are rounded to it first, then the product is taken in float32, as the CPU kernel
        does.
        """
        scales = self.scales.astype(scale_dtype).astype(np.float32)
        centered = self.codes().astype(np.float32) - self.zero_point_codes()[..., None]
        values = centered * scales[..., None]
        return values.reshape(self.n, -1)[:, : self.k]


def quantize_blocks(
    weight,
    block_size: int = 32,
    symmetric: bool = True,
    bits: int = 4,
    method: str = DEFAULT_METHOD,
) -> BlockWeight:
    """Quantize ``weight`` [N, K] (any float dtype; an array or anything sliced by rows, such
    as converter.rows.Rows) along K, choosing the scales by `method` ("rtn" or "search")."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if bits not in BITS:
        raise ValueError(f"bits must be one of {BITS}, got {bits}")
    if block_size not in BLOCK_SIZES:
        raise ValueError(f"block_size must be one of {BLOCK_SIZES}, got {block_size}")
    if weight.ndim != 2 or 0 in weight.shape:
        raise ValueError(f"expected a non-empty 2-D [N, K] weight, got shape {weight.shape}")
    if not np.issubdtype(weight.dtype, np.floating) and weight.dtype != ml_dtypes.bfloat16:
        raise ValueError(f"expected a floating-point weight, got {weight.dtype}")
    n, k = weight.shape
    n_blocks = -(-k // block_size)
    packed = np.empty((n, n_blocks, block_size * bits // 8), np.uint8)
    scales = np.empty((n, n_blocks), np.float32)
    zero_points = None if symmetric else np.empty((n, n_blocks), np.uint8)
    rows = max(1, _CHUNK_VALUES // (n_blocks * block_size))

    def chunk(start: int) -> None:  # fully vectorized; the chunks write disjoint rows
        part = slice(start, start + rows)
        zp_out = None if zero_points is None else zero_points[part]
        _quantize_rows(weight[part], block_size, bits, packed[part], scales[part], zp_out, method)

    starts = range(0, n, rows)
    if _WORKERS > 1 and len(starts) > 1:
        list(_pool(_WORKERS, os.getpid()).map(chunk, starts))
    else:
        for start in starts:
            chunk(start)
    if not np.isfinite(scales).all():
        raise ValueError("weight contains NaN or infinite values (or a block range over float32)")
    if zero_points is not None and bits == 4:
        if n_blocks % 2:
            zero_points = np.pad(zero_points, ((0, 0), (0, 1)))
        zero_points = _pack_nibbles(zero_points)
    return BlockWeight(packed, scales, zero_points, k, block_size, bits)


@functools.cache
def _pool(workers: int, pid: int) -> ThreadPoolExecutor:
    """The chunks' threads (per process: a forked child gets its own, not its parent's)."""
    return ThreadPoolExecutor(workers, thread_name_prefix="quantize")


def cast_scales(
    scales: np.ndarray, dtype: DTypeLike, name: str, signed: bool = False
) -> np.ndarray:
    """`scales` in `dtype`, after checking that they are finite and (unless `signed`: our own
    symmetric blocks put their extreme on the lowest code with a scale of either sign)
    nonnegative, and stay finite in `dtype` (a float16 scale overflows above 65504); errors
    name the tensor `name`."""
    values = scales.astype(np.float32)
    bad = ~np.isfinite(values) | (False if signed else values < 0)
    if bad.any():
        raise WeightsError(
            f"tensor '{name}': scales must be finite and nonnegative ({int(bad.sum())} are not)"
        )
    with np.errstate(over="ignore"):
        converted = scales.astype(dtype)
    if not np.isfinite(converted.astype(np.float32)).all():
        raise WeightsError(f"tensor '{name}': scales overflow {np.dtype(dtype).name}")
    return converted


def from_codes(codes: np.ndarray, scales: np.ndarray, k: int) -> BlockWeight:
    """Symmetric 4-bit blocks given as they are (zero point 8, as the MatMulNBits default):
    ``codes`` uint8 [N, n_blocks, block_size] in 0..15, ``scales`` float32 [N, n_blocks]. For
    weights already quantized elsewhere (a GGUF Q4_0 tensor), kept without requantizing."""
    n, n_blocks, block_size = codes.shape
    packed = _pack_nibbles(codes).reshape(n, n_blocks, block_size // 2)
    return BlockWeight(packed, np.ascontiguousarray(scales, np.float32), None, k, block_size)


def to_dequantize_linear(q: BlockWeight) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The standard-ONNX form: ``(values [K, N], scales [n_blocks, N], zero_points | None)``.

    Use as ``MatMul(x, DequantizeLinear(values, scales, zero_points, axis=0,
    block_size=q.block_size))``: [K, N] is MatMul's right-hand layout, so no Transpose runs, and
    the blocks run along axis 0 (K). K is not padded (MatMul needs exactly K rows); the last
    block may be partial, as blocked DequantizeLinear allows (n_blocks = ceil(K / block_size)).
    Symmetric codes become signed values ``q - 2^(bits-1)`` (``ml_dtypes.int4`` or int8) with no
    zero point (default 0); asymmetric ones unsigned (``ml_dtypes.uint4`` or uint8) with zero
    points of that type [n_blocks, N]. onnx_ir.Tensor takes 4-bit arrays as INT4/UINT4 and packs
    two per byte itself. Scales stay float32: cast them to the activation dtype, which
    DequantizeLinear then outputs.
    """
    symmetric = q.zero_points is None
    offset = q.symmetric_zero_point if symmetric else 0
    scales = np.ascontiguousarray(q.scales.T)
    if q.bits == 8:
        codes = (q.packed.reshape(q.n, -1)[:, : q.k] - np.uint8(offset)).T
        if symmetric:
            return np.ascontiguousarray(codes.view(np.int8)), scales, None
        return np.ascontiguousarray(codes), scales, np.ascontiguousarray(q.zero_points.T)
    codes = _unpack_transposed(q.packed.reshape(q.n, -1), offset)[: q.k]
    if symmetric:
        return codes.view(np.int8).view(ml_dtypes.int4), scales, None
    zero_points = _unpack_transposed(q.zero_points)[: q.n_blocks]
    return codes.view(ml_dtypes.uint4), scales, zero_points.view(ml_dtypes.uint4)


def _quantize_rows(
    weight: np.ndarray,
    block_size: int,
    bits: int,
    packed: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray | None,
    method: str = DEFAULT_METHOD,
) -> None:
    """Quantize a chunk of rows into the given output slices.

    The chunk is worked on transposed, so that the per-block max/min, scaling and packing are
    operations on long contiguous rows rather than slow reductions over 16..128-value runs.
    numpy's strided copy costs about the same per item whatever its size (about a cycle), so
    the chunk is transposed 16 bytes at a time: row `r` holds every block's `r`-th 16 bytes,
    `group` adjacent pairs of values side by side, split afterwards into the pairs' first and
    second values (the block's even and odd positions). The pairs' codes, each pair's joined
    into one number, go back the same way.
    """
    rows, k = weight.shape
    n_blocks = scales.shape[1]
    if weight.dtype.itemsize > 4:
        weight = weight.astype(np.float32)
    if k % block_size:
        padded = np.zeros((rows, n_blocks * block_size), weight.dtype)
        padded[:, :k] = weight
        weight = padded
    weight = np.ascontiguousarray(weight)
    group = _ITEM // (2 * weight.dtype.itemsize)  # pairs of values per transposed item
    blocks = rows * n_blocks
    items = np.array(weight.reshape(blocks, block_size).view(f"V{_ITEM}").T, order="C")
    pairs = items.view(f"u{2 * weight.dtype.itemsize}")  # [block_size / 2 / group, blocks * group]
    halves = _halves(pairs, weight.dtype)  # [2, *pairs.shape]: first and second values
    columns = halves.reshape(-1, pairs.shape[1])
    high = _per_block(np.maximum, columns.max(axis=0), group)
    low = _per_block(np.minimum, columns.min(axis=0), group)
    scale = scales.reshape(-1)
    top, middle = (1 << bits) - 1, 1 << (bits - 1)
    if zero_points is None:  # the signed extreme on code 0 (module doc)
        np.divide(np.where(high >= -low, high, low), -middle, out=scale)
    else:
        np.maximum(high, 0, out=high)
        np.minimum(low, 0, out=low)
        np.divide(high - low, top, out=scale)
    inverse = np.zeros_like(scale)
    np.divide(1, scale, out=inverse, where=np.abs(scale) >= _TINY)
    if zero_points is None:
        offset = middle
    else:
        offset = np.clip(np.rint(-low * inverse), 0, top)
        zero_points.reshape(-1)[...] = offset
    if method == "search":  # on the blocks in their own order: the sums round the same
        by_position = halves.reshape(2, -1, blocks, group).transpose(1, 3, 0, 2)
        ordered = np.ascontiguousarray(by_position).reshape(block_size, blocks)
        inverse = _searched_inverse(ordered, scale, offset, top)
        codes = _codes(ordered, inverse, offset, top, np.empty_like(ordered))
        _refit(ordered, codes - offset, scale)
        by_position[...] = codes.reshape(by_position.shape)
    else:
        if zero_points is not None:
            offset = np.repeat(offset, group)
        _codes(halves, np.repeat(inverse, group), offset, top, halves)
    # a pair's two codes as one number (exact in float32), then as bytes side by side
    joined = np.multiply(halves[1], 1 << bits, out=halves[1])
    joined += halves[0]
    joined = joined.astype(f"<u{bits // 4}").view(f"<u{group * bits // 4}")
    np.copyto(packed.reshape(blocks, -1).view(joined.dtype), joined.T)


def _halves(pairs: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float32 [2, *pairs.shape]: the first and the second value of each item of `pairs`
    (two values of `dtype` per item, little-endian)."""
    halves = np.empty((2, *pairs.shape), np.float32)
    if dtype == ml_dtypes.bfloat16:  # a bfloat16 is the high half of its float32
        bits = halves.view(np.uint32)
        np.left_shift(pairs, 16, out=bits[0])
        np.bitwise_and(pairs, 0xFFFF0000, out=bits[1])
    else:
        values = pairs.view(dtype).reshape(*pairs.shape, 2)
        np.copyto(halves, np.moveaxis(values, -1, 0))
    return halves


def _per_block(combine, values: np.ndarray, group: int) -> np.ndarray:
    """`values` [blocks * group] combined over each block's `group` adjacent entries."""
    by_block = values.reshape(-1, group)
    result = by_block[:, 0].copy()
    for column in range(1, group):
        combine(result, by_block[:, column], out=result)
    return result


def _codes(values, inverse, offset, top: int, out: np.ndarray) -> np.ndarray:
    """RTN's codes of `values` [..., columns] at scales ``1 / inverse`` (per column) into
    `out` (float32): ``clip(rint(values * inverse + offset), 0, top)``."""
    np.multiply(values, inverse, out=out)
    out += offset
    np.rint(out, out=out)
    return np.clip(out, 0, top, out=out)


def _searched_inverse(values: np.ndarray, scale: np.ndarray, offset, top: int) -> np.ndarray:
    """The search method's candidates (module doc) for `values` [block_size, blocks] around
    RTN's `scale` (per block): ``1 / scale`` of the one reconstructing each block best."""
    best_error = np.full(scale.shape, np.inf, np.float32)
    best_inverse = np.zeros_like(scale)
    error = np.empty_like(values)
    for factor in SEARCH_FACTORS:  # a few candidates, each vectorized over every block
        candidate = scale * np.float32(factor)
        inverse = np.zeros_like(candidate)
        np.divide(1, candidate, out=inverse, where=np.abs(candidate) >= _TINY)
        _codes(values, inverse, offset, top, error)
        error -= offset
        error *= candidate
        error -= values
        squared = np.einsum("ij,ij->j", error, error)
        better = squared < best_error
        best_error[better] = squared[better]
        best_inverse[better] = inverse[better]
    return best_inverse


def _refit(values: np.ndarray, centered: np.ndarray, scale: np.ndarray) -> None:
    """`scale` (per block) <- the least-squares scale of `values` given the codes minus the zero
    point `centered` [block_size, blocks]; blocks whose codes are all zero keep theirs."""
    fit = np.einsum("ij,ij->j", values, centered)
    norm = np.einsum("ij,ij->j", centered, centered)
    np.divide(fit, norm, out=scale, where=norm > 0)


def _pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """Pack 4-bit codes (uint8, even last dim) two per byte, the even index in the low nibble."""
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def _unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_pack_nibbles`: the last dim doubles."""
    codes = np.stack((packed & 0x0F, packed >> 4), axis=-1)
    return codes.reshape(*packed.shape[:-1], -1)


def _unpack_transposed(packed: np.ndarray, offset: int = 0) -> np.ndarray:
    """uint8 [R, C] packed two codes per byte -> codes minus ``offset`` [2C, R], contiguous.

    The subtraction wraps in uint8, so the bytes read as int8 give signed codes. Works on a
    cache-sized band of rows at a time, about twice as fast as one whole-array transpose.
    """
    rows, cols = packed.shape
    codes = np.empty((2 * cols, rows), np.uint8)
    band = max(1, _CHUNK_VALUES // (2 * cols))
    for start in range(0, rows, band):
        part = packed[start : start + band].T
        np.bitwise_and(part, 0x0F, out=codes[0::2, start : start + band])
        np.right_shift(part, 4, out=codes[1::2, start : start + band])
        if offset:
            np.subtract(codes[:, start : start + band], offset, out=codes[:, start : start + band])
    return codes

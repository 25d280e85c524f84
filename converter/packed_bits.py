"""Integer codes of 2, 3, 4 or 8 bits packed into uint8 rows.

Each row of `count` codes is one bitstream: code j occupies bits [j * bits, (j + 1) * bits)
counted from the least significant bit of the row's first byte, and the row ends with zero
bits up to a whole byte. For 2, 4 and 8 bits this is Olive's packing (and MatMulNBits' nibble
order); for 3 bits it is the row-local raw INT3 layout proposed for QMoE in
microsoft/onnxruntime#32657 (codes straddle byte boundaries, no per-block padding).
"""

from __future__ import annotations

import numpy as np


def packed_width(count: int, bits: int) -> int:
    """Bytes of a row of `count` codes."""
    return -(-count * bits // 8)


def unpack_codes(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """uint8 [..., packed_width(count, bits)] -> the codes, uint8 [..., count]."""
    stream = np.unpackbits(packed, axis=-1, bitorder="little")[..., : count * bits]
    digits = stream.reshape(*packed.shape[:-1], count, bits)
    return np.packbits(digits, axis=-1, bitorder="little")[..., 0]


def padding_is_zero(packed: np.ndarray, bits: int, count: int) -> bool:
    """Whether every row's bits after its last code are zero."""
    stream = np.unpackbits(packed, axis=-1, bitorder="little")
    return not stream[..., count * bits :].any()

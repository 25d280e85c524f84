"""ALiBi (attention with linear biases): a per-head slope times each key's position, added to
the attention scores instead of rotating q and k. The slope formulas of the families that use
it live here; `Alibi` is what the attention kernel reads."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Alibi:
    """Bias of head h for a key at position p: `slopes[h] * p * scale`; `bfloat16` rounds the
    slopes and each product `slope * p` to bfloat16 first, as Falcon builds its bias."""

    slopes: tuple[float, ...]
    scale: float = 1.0
    bfloat16: bool = False


def geometric_slopes(heads: int) -> tuple[float, ...]:
    """BLOOM's and Falcon's slopes: 2^(-8i/n) for the largest power of two n <= heads, then
    the odd powers of the next power of two's sequence for the remaining heads."""
    n = 2 ** math.floor(math.log2(heads))
    slopes = [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]
    extra = min(n, heads - n)
    slopes += [2.0 ** (-8.0 * i / (2 * n)) for i in range(1, 2 * extra, 2)]
    return tuple(slopes)


def mpt_slopes(heads: int, bias_max: float) -> tuple[float, ...]:
    """MPT's slopes: 2^(-bias_max * i / n) for n the power of two >= heads, every other one
    first (odd i, then even i) when heads is not a power of two."""
    n = 2 ** math.ceil(math.log2(heads))
    slopes = [2.0 ** (-bias_max * i / n) for i in range(1, n + 1)]
    if n != heads:
        slopes = (slopes[1::2] + slopes[::2])[:heads]
    return tuple(slopes)

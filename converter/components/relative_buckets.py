"""T5's relative position bias: the distance key - query falls into one of a few buckets (exact
near zero, logarithmic farther out, one bucket for everything beyond max_distance), and each
bucket has a learned bias per head, added to the attention scores.

Distances saturate at +-max_distance, so the buckets are a constant table over
[-max_distance, max_distance] computed here in float32 as torch does, and the graph only clips
the distances and gathers.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.errors import ConfigError


def bucket_table(bidirectional: bool, buckets: int, max_distance: int) -> np.ndarray:
    """The bucket of every distance d = key - query in [-max_distance, max_distance], at index
    d + max_distance (transformers' T5Attention._relative_position_bucket)."""
    distance = np.arange(-max_distance, max_distance + 1, dtype=np.int64)
    offset = np.zeros_like(distance)
    if bidirectional:
        buckets //= 2
        offset = np.where(distance > 0, buckets, 0)
        distance = np.abs(distance)
    else:
        distance = -np.minimum(distance, 0)
    exact = buckets // 2
    if max_distance <= exact:
        raise ConfigError(
            f"'relative_attention_max_distance' = {max_distance} must exceed the {exact} "
            "distances its buckets hold exactly"
        )
    with np.errstate(divide="ignore"):  # log(0) for the distances that stay exact
        ratio = np.log(distance.astype(np.float32) / np.float32(exact))
    scaled = ratio / np.float32(np.log(max_distance / exact)) * np.float32(buckets - exact)
    far = exact + np.where(distance < exact, 0, scaled).astype(np.int64)
    return offset + np.where(distance < exact, distance, np.minimum(far, buckets - 1))


class RelativeBias(nn.Module):
    """`weight` [buckets, heads]: the checkpoint's relative_attention_bias.weight."""

    def __init__(
        self, buckets: int, heads: int, max_distance: int, bidirectional: bool, dtype: ir.DataType
    ):
        super().__init__()
        self.weight = nn.Parameter([buckets, heads], dtype)
        self.table = bucket_table(bidirectional, buckets, max_distance)
        self.max_distance = max_distance

    def forward(self, op, distance):
        """The bias of int64 distances (key - query) of any shape, with the heads last."""
        low, high = (op.Constant(value_int=v) for v in (0, 2 * self.max_distance))
        index = op.Clip(op.Add(distance, self.max_distance), low, high)
        buckets = op.Gather(op.Constant(value=ir.tensor(self.table)), index, axis=0)
        return op.Gather(self.weight, buckets, axis=0)


def pairwise_bias(op, relative: RelativeBias, query_positions, key_positions):
    """[1, heads, queries, keys]: the bias of each key position for each query position."""
    distance = op.Sub(op.Unsqueeze(key_positions, [0]), op.Unsqueeze(query_positions, [1]))
    return op.Unsqueeze(op.Transpose(relative(op, distance), perm=[2, 0, 1]), [0])

"""Token and position embedding tables."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn


class Embedding(nn.Module):
    def __init__(self, num_embeddings: int, dim: int, dtype: ir.DataType, scale: float = 1.0):
        super().__init__()
        self.weight = nn.Parameter([num_embeddings, dim], dtype)
        self.scale = scale

    def forward(self, op, tokens, embedded: bool = False):
        """Rows for token ids, or (`embedded`) embeddings given as they are; both scaled, as
        transformers scales `inputs_embeds` too."""
        x = tokens if embedded else op.Gather(self.weight, tokens, axis=0)
        return x if self.scale == 1.0 else op.Mul(x, self.scale)

"""torch.nn.BatchNorm1d at inference: each channel of x [batch, channels, time] normalised by
the running statistics the checkpoint stores."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

# the step counter BatchNorm checkpoints carry, which inference never reads
BATCH_NORM_UNUSED = r".*\.num_batches_tracked"


class BatchNorm1d(nn.Module):
    def __init__(self, channels: int, dtype: ir.DataType, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter([channels], dtype)
        self.bias = nn.Parameter([channels], dtype)
        self.running_mean = nn.Parameter([channels], dtype)
        self.running_var = nn.Parameter([channels], dtype)
        self.eps = eps

    def forward(self, op, x):
        return op.BatchNormalization(
            x, self.weight, self.bias, self.running_mean, self.running_var, epsilon=self.eps
        )

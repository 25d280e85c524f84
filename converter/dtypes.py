"""The float dtypes a package computes in, by name, as onnx_ir types and as numpy dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx_ir as ir

FLOAT_TYPES: dict[str, ir.DataType] = {
    "f32": ir.DataType.FLOAT,
    "f16": ir.DataType.FLOAT16,
    "bf16": ir.DataType.BFLOAT16,
}
NAME_OF: dict[ir.DataType, str] = {dtype: name for name, dtype in FLOAT_TYPES.items()}
NUMPY_OF: dict[ir.DataType, np.dtype] = {
    ir.DataType.FLOAT: np.dtype(np.float32),
    ir.DataType.FLOAT16: np.dtype(np.float16),
    ir.DataType.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
}
# onnxruntime's type strings of graph inputs, for feeding them from numpy
ORT_NUMPY: dict[str, np.dtype] = {
    "tensor(float)": np.dtype(np.float32),
    "tensor(float16)": np.dtype(np.float16),
    "tensor(int64)": np.dtype(np.int64),
    "tensor(int32)": np.dtype(np.int32),
    "tensor(float8e4m3fn)": np.dtype(np.uint8),  # its bytes: numpy has no float8
}

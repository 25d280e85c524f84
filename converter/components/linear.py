"""Dense projections in the two checkpoint layouts Hugging Face uses."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn


class Linear(nn.Module):
    """torch.nn.Linear: `weight` is [out, in]; a save-time pass stores it pre-transposed.
    A `head` (the LM head) gets int4 builds' head bits (`--int4-head-bits`), never int8."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool,
        dtype: ir.DataType,
        head: bool = False,
    ):
        super().__init__()
        self.weight = nn.Parameter([out_features, in_features], dtype)
        self.bias = nn.Parameter([out_features], dtype) if bias else None
        self.head = head

    def expected_fusions(self, plan) -> dict[str, int]:
        return plan.quantized_matmuls(head=self.head)

    def forward(self, op, x):
        y = op.MatMul(x, op.Transpose(self.weight, perm=[1, 0]))
        return y if self.bias is None else op.Add(y, self.bias)


class Bias(nn.Module):
    """A bias alone: what an LM head tied to the embeddings keeps of its own (CTRL)."""

    def __init__(self, size: int, dtype: ir.DataType):
        super().__init__()
        self.bias = nn.Parameter([size], dtype)

    def forward(self, op, x):
        return op.Add(x, self.bias)


class Conv1D(nn.Module):
    """GPT-2's Conv1D: `weight` is already [in, out]."""

    def __init__(self, in_features: int, out_features: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([in_features, out_features], dtype)
        self.bias = nn.Parameter([out_features], dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return plan.quantized_matmuls()

    def forward(self, op, x):
        return op.Add(op.MatMul(x, self.weight), self.bias)


class PackedLinear(nn.Module):
    """Sibling projections of one input (q/k/v, gate/up), optionally as one MatMul.

    Parameters keep their own checkpoint names (`q_proj.weight`, ...); when `packed`, the
    graph concatenates them and a save-time pass folds the concatenation into a single
    initializer, so EPs that prefer one wide MatMul get it without a renaming table.
    """

    def __init__(
        self,
        parts: list[tuple[str, int]],
        in_features: int,
        bias: bool,
        dtype: ir.DataType,
        packed: bool,
    ):
        super().__init__(name="")  # parameters live directly in the owner's scope
        self.sizes = [size for _, size in parts]
        self.packed = packed
        self.weights = [
            nn.Parameter([size, in_features], dtype, f"{n}.weight") for n, size in parts
        ]
        self.biases = (
            [nn.Parameter([size], dtype, f"{n}.bias") for n, size in parts] if bias else []
        )
        for i, param in enumerate(self.weights + self.biases):
            setattr(self, f"p{i}", param)

    def expected_fusions(self, plan) -> dict[str, int]:
        matmuls = 1 if self.packed else len(self.weights)
        return {
            "packed_tensors": (2 if self.biases else 1) if self.packed else 0,
            **plan.quantized_matmuls(matmuls),
        }

    def forward(self, op, x, split: bool = True):
        """The parts' outputs, or with `split` False (only when `packed`) the packed output,
        the parts side by side."""
        if not self.packed:
            outs = [op.MatMul(x, op.Transpose(w, perm=[1, 0])) for w in self.weights]
            if self.biases:
                outs = [op.Add(y, b) for y, b in zip(outs, self.biases, strict=True)]
            return outs
        weight = op.Concat(*self.weights, axis=0)
        y = op.MatMul(x, op.Transpose(weight, perm=[1, 0]))
        if self.biases:
            y = op.Add(y, op.Concat(*self.biases, axis=0))
        return op.Split(y, self.sizes, axis=-1, _outputs=len(self.sizes)) if split else y

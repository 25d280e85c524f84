"""Feed-forward blocks."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.activations import activation
from converter.components.linear import Linear, PackedLinear


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)); Phi-3 stores gate and up as one `gate_up_proj`."""

    def __init__(self, cfg, dtype: ir.DataType, packed: bool = False):
        super().__init__()
        hidden, inner, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.act = cfg.activation
        if cfg.fused_gate_up:
            self.gate_up_proj = Linear(hidden, 2 * inner, bias, dtype)
        else:
            parts = [("gate_proj", inner), ("up_proj", inner)]
            self.gate_up = PackedLinear(parts, hidden, bias, dtype, packed)
        self.down_proj = Linear(inner, hidden, bias, dtype)
        self.fused = cfg.fused_gate_up

    def forward(self, op, x):
        if self.fused:
            gate, up = op.Split(self.gate_up_proj(op, x), axis=-1, num_outputs=2, _outputs=2)
        else:
            gate, up = self.gate_up(op, x)
        return self.down_proj(op, op.Mul(activation(op, self.act, gate), up))


class PlainMLP(nn.Module):
    """fc2(act(fc1(x))); a family may name the two projections otherwise."""

    in_name, out_name = "fc1", "fc2"

    def __init__(self, cfg, dtype: ir.DataType, packed: bool = False):  # nothing to pack
        super().__init__()
        self.act = cfg.activation
        inner, bias = cfg.intermediate_size, cfg.mlp_bias
        setattr(self, self.in_name, Linear(cfg.hidden_size, inner, bias, dtype))
        setattr(self, self.out_name, Linear(inner, cfg.hidden_size, bias, dtype))

    def forward(self, op, x):
        h = activation(op, self.act, getattr(self, self.in_name)(op, x))
        return getattr(self, self.out_name)(op, h)

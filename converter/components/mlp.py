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
        return self._down(op, op.Mul(activation(op, self.act, gate), up))

    def _down(self, op, h):
        return self.down_proj(op, h)


class PlainMLP(nn.Module):
    """out(act(in(x))), named `fc1`/`fc2` or as the family's checkpoint names them."""

    in_proj_name, out_proj_name = "fc1", "fc2"

    def __init__(self, cfg, dtype: ir.DataType, packed: bool = False):  # nothing to pack
        super().__init__()
        self.act = cfg.activation
        hidden, inner, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        setattr(self, self.in_proj_name, Linear(hidden, inner, bias, dtype))
        setattr(self, self.out_proj_name, Linear(inner, hidden, bias, dtype))

    def forward(self, op, x):
        h = activation(op, self.act, getattr(self, self.in_proj_name)(op, x))
        return getattr(self, self.out_proj_name)(op, h)

"""Feed-forward blocks."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.activations import activation, trained_activation
from converter.components.linear import Linear, PackedLinear


class _Activated(nn.Module):
    """An MLP's activation: by name, or its `act_fn` module when it has trained parameters."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        self.act = cfg.activation
        self.act_fn = trained_activation(cfg.activation, dtype)

    def _activate(self, op, x):
        if self.act_fn is None:
            return activation(op, self.act, x)
        return self.act_fn(op, x)


class GatedMLP(_Activated):
    """down(act(gate(x)) * up(x)); Phi-3 stores gate and up as one `gate_up_proj`; subclasses
    name the projections as their checkpoints do."""

    gate_name, up_name, down_name = "gate_proj", "up_proj", "down_proj"

    def __init__(self, cfg, dtype: ir.DataType, packed: bool = False):
        super().__init__(cfg, dtype)
        hidden, inner, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        if cfg.fused_gate_up:
            self.gate_up_proj = Linear(hidden, 2 * inner, bias, dtype)
        else:
            parts = [(self.gate_name, inner), (self.up_name, inner)]
            self.gate_up = PackedLinear(parts, hidden, bias, dtype, packed)
        setattr(self, self.down_name, Linear(inner, hidden, bias, dtype))
        self.fused = cfg.fused_gate_up

    def forward(self, op, x):
        if self.fused:
            gate, up = op.Split(self.gate_up_proj(op, x), axis=-1, num_outputs=2, _outputs=2)
        else:
            gate, up = self.gate_up(op, x)
        return self._down(op, op.Mul(self._activate(op, gate), up))

    def _down(self, op, h):
        return getattr(self, self.down_name)(op, h)


class PlainMLP(_Activated):
    """fc2(act(fc1(x))); subclasses name the two projections as their checkpoints do."""

    in_name, out_name = "fc1", "fc2"

    def __init__(self, cfg, dtype: ir.DataType, packed: bool = False):  # nothing to pack
        super().__init__(cfg, dtype)
        hidden, inner, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        setattr(self, self.in_name, Linear(hidden, inner, bias, dtype))
        setattr(self, self.out_name, Linear(inner, hidden, bias, dtype))

    def forward(self, op, x):
        up = getattr(self, self.in_name)(op, x)
        return getattr(self, self.out_name)(op, self._activate(op, up))


class UpDownMLP(PlainMLP):
    """down_proj(act(up_proj(x))): the ungated MLP of Nemotron, Arcee, Apertus, Jais 2 and MPT."""

    in_name, out_name = "up_proj", "down_proj"


class FcProjMLP(PlainMLP):
    """c_proj(act(c_fc(x))): GPT-2's names on torch Linear weights (GPT-Neo, GPT-BigCode,
    StarCoder2)."""

    in_name, out_name = "c_fc", "c_proj"


class MegatronMLP(PlainMLP):
    """dense_4h_to_h(act(dense_h_to_4h(x))): Megatron's names (GPT-NeoX, Persimmon, BLOOM,
    Falcon)."""

    in_name, out_name = "dense_h_to_4h", "dense_4h_to_h"

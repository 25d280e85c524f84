"""Jais 2: Llama's layout with LayerNorm, biased projections and a plain `up_proj`/`down_proj`
MLP (squared ReLU by default)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, activation
from converter.config import ArchitectureConfig, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class UpDownMLP(nn.Module):
    """down_proj(act(up_proj(x)))."""

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, packed: bool = False):
        super().__init__()  # nothing to pack
        self.act = cfg.activation
        self.up_proj = Linear(cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias, dtype)
        self.down_proj = Linear(cfg.intermediate_size, cfg.hidden_size, cfg.mlp_bias, dtype)

    def forward(self, op, x):
        return self.down_proj(op, activation(op, self.act, self.up_proj(op, x)))


class Jais2Layer(DecoderLayer):
    mlp_cls = UpDownMLP


class Jais2Body(DecoderBody):
    layer_cls = Jais2Layer


class Jais2LM(DecoderLM):
    body_cls = Jais2Body


FAMILIES = [
    Family(
        "jais2",
        Jais2LM,
        "LayerNorm, biased projections, squared-ReLU up/down MLP",
        ("inceptionai/Jais-2-8B-Chat",),
        rules=ConfigRules(norm_type="layer"),
    ),
]

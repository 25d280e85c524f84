"""BitNet b1.58 (unquantized): Llama with a squared-ReLU MLP and an RMSNorm before each output
projection (`attn_sub_norm`, `ffn_sub_norm`)."""

from __future__ import annotations

import onnx_ir as ir

from converter.components import Attention, GatedMLP, RMSNorm
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class BitNetAttention(Attention):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, spec, packed: bool = False):
        super().__init__(cfg, dtype, spec, packed)
        self.attn_sub_norm = RMSNorm(spec.heads * spec.head_dim, cfg.norm_eps, dtype)

    def _output(self, op, y, x):
        return self.o_proj(op, self.attn_sub_norm(op, y))


class BitNetMLP(GatedMLP):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, packed: bool = False):
        super().__init__(cfg, dtype, packed)
        self.ffn_sub_norm = RMSNorm(cfg.intermediate_size, cfg.norm_eps, dtype)

    def _down(self, op, h):
        return self.down_proj(op, self.ffn_sub_norm(op, h))


class BitNetLayer(DecoderLayer):
    attention_cls = BitNetAttention
    mlp_cls = BitNetMLP


class BitNetBody(DecoderBody):
    layer_cls = BitNetLayer


class BitNetLM(DecoderLM):
    body_cls = BitNetBody


class BitNetRules(ConfigRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        if r.has("quantization_config"):
            r.refuse(
                "quantization_config",
                "BitNet's ternary weights packed four to a byte, with 8-bit activation "
                "quantization, are not converted yet; an unquantized BitNet checkpoint is",
            )
        return super().read(r)


FAMILIES = [
    Family(
        "bitnet",
        BitNetLM,
        "RMSNorm before the attention and MLP output projections, squared ReLU (unquantized)",
        rules=BitNetRules(),
    ),
]

"""Pre-norm variants of the BERT layout: x + attention(norm(x)), then x + mlp(norm(x)), and one
more norm after the last layer. The families differ only in where their norms live and what
they are called, which the class attributes below name:

  RoBERTa-PreLayerNorm  attention.LayerNorm, intermediate.LayerNorm, the body's LayerNorm
  XLM-RoBERTa-XL        attention.self_attn_layer_norm, the layer's LayerNorm, encoder.LayerNorm
  Megatron-BERT         attention.ln, the layer's ln, encoder.ln
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.config.encoder import EncoderConfig
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertBody, BertEncoder, BertIntermediate, BertSelfAttention


def _norm(cfg: EncoderConfig, dtype: ir.DataType) -> LayerNorm:
    return LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)


class DenseResidual(nn.Module):
    """`dense`, plus the residual (a pre-norm block's output)."""

    def __init__(self, in_size: int, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(in_size, cfg.hidden_size, True, dtype)

    def forward(self, op, x, residual):
        return op.Add(self.dense(op, x), residual)


class PreNormAttention(nn.Module):
    """The norm under `norm_name`, self-attention, and `output` adding the residual."""

    norm_name = "LayerNorm"

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        setattr(self, self.norm_name, _norm(cfg, dtype))
        setattr(self, "self", BertSelfAttention(cfg, dtype))  # noqa: B010 (the checkpoint's name)
        self.output = DenseResidual(cfg.hidden_size, cfg, dtype)

    def forward(self, op, x, kernel, bias=None):
        normed = getattr(self, self.norm_name)(op, x)
        return self.output(op, self.self(op, normed, kernel, bias), x)


class NormedIntermediate(BertIntermediate):
    """LayerNorm, then BERT's intermediate (where RoBERTa-PreLayerNorm keeps the MLP's norm)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.LayerNorm = _norm(cfg, dtype)

    def forward(self, op, x):
        return super().forward(op, self.LayerNorm(op, x))


class PreNormLayer(nn.Module):
    """`mlp_norm_name`: the layer's own norm before the MLP (None: the intermediate holds it)."""

    attention_cls = PreNormAttention
    intermediate_cls = BertIntermediate
    mlp_norm_name: str | None = "LayerNorm"

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = self.attention_cls(cfg, dtype)
        self.intermediate = self.intermediate_cls(cfg, dtype)
        self.output = DenseResidual(cfg.intermediate_size, cfg, dtype)
        if self.mlp_norm_name is not None:
            setattr(self, self.mlp_norm_name, _norm(cfg, dtype))

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a residual sum (the first layer's: see PreNormBody)
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, bias=None):
        x = self.attention(op, x, kernel, bias)
        h = x if self.mlp_norm_name is None else getattr(self, self.mlp_norm_name)(op, x)
        return self.output(op, self.intermediate(op, h), x)


class PreNormEncoder(BertEncoder):
    """The layers, then the final norm under `final_norm_name` (None: the body holds it)."""

    layer_cls = PreNormLayer
    final_norm_name: str | None = "LayerNorm"

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        if self.final_norm_name is not None:
            setattr(self, self.final_norm_name, _norm(cfg, dtype))

    def forward(self, op, x, kernel, bias=None):
        x = super().forward(op, x, kernel, bias)
        return x if self.final_norm_name is None else getattr(self, self.final_norm_name)(op, x)


class PreNormBody(BertBody):
    encoder_cls = PreNormEncoder

    def expected_fusions(self, plan) -> dict[str, int]:
        # the final norm reads the last residual sum (+1); the first layer's norm reads the
        # embeddings' own LayerNorm where they have one, not a sum (-1)
        fused = 1 - int(self.embeddings.normed)
        return {"skip_norms": fused if plan.has(SKIP_NORM) else 0}

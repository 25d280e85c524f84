"""DeBERTa (v1): DeBERTa-v2's disentangled attention (converter/models/deberta_v2.py) without
log buckets, shared keys, a normed relative table or the convolution; q, k and v come from one
bias-free `in_proj` whose rows run head by head (q, k, v of head 0, then of head 1, ...), with
`q_bias` and `v_bias` added, and the relative rows are projected by `pos_proj` (c2p, no bias) and
`pos_q_proj` (p2c)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.config.encoder import EncoderConfig
from converter.models.deberta_v2 import (
    DEBERTA_UNUSED,
    DebertaAttention,
    DebertaBody,
    DebertaEncoder,
    DebertaLayer,
    DebertaRules,
    DebertaV2Model,
    Disentangled,
    RelativePositions,
    disentangled_bias,
)
from converter.registry import Family


class DebertaSelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Disentangled = cfg.extra["deberta"]
        size = cfg.hidden_size
        self.in_proj = Linear(size, 3 * size, False, dtype)
        self.q_bias = nn.Parameter([size], dtype)
        self.v_bias = nn.Parameter([size], dtype)
        self.pos_proj = Linear(size, size, False, dtype) if s.relative and s.c2p else None
        self.pos_q_proj = Linear(size, size, True, dtype) if s.relative and s.p2c else None
        self.s, self.heads, self.head_dim = s, cfg.num_attention_heads, cfg.head_dim
        self.divisor = float(np.sqrt(np.float32(cfg.head_dim * s.scale_factor)))

    def forward(self, op, x, kernel, rel: RelativePositions | None):
        per_head = op.Reshape(self.in_proj(op, x), [0, 0, self.heads, 3 * self.head_dim])
        q, k, v = (
            op.Reshape(part, [0, 0, -1])
            for part in op.Split(per_head, axis=-1, num_outputs=3, _outputs=3)
        )
        q, v = op.Add(q, self.q_bias), op.Add(v, self.v_bias)
        bias = None
        if rel is not None and (self.s.c2p or self.s.p2c):
            pos_key = self.pos_proj(op, rel.table) if self.s.c2p else None
            pos_query = self.pos_q_proj(op, rel.table) if self.s.p2c else None
            bias = disentangled_bias(op, q, k, pos_key, pos_query, rel, self.heads, self.divisor)
        return kernel(op, q, k, v, self.heads, 1.0 / self.divisor, bias)


class DebertaV1Attention(DebertaAttention):
    self_attention_cls = DebertaSelfAttention


class DebertaV1Layer(DebertaLayer):
    attention_cls = DebertaV1Attention


class DebertaV1Encoder(DebertaEncoder):
    layer_cls = DebertaV1Layer


class DebertaV1Body(DebertaBody):
    encoder_cls = DebertaV1Encoder


class DebertaModel(DebertaV2Model):
    body_cls = DebertaV1Body


FAMILIES = [
    Family(
        "deberta",
        DebertaModel,
        "disentangled relative attention (c2p/p2c) from one packed in_proj, masked embeddings",
        ("microsoft/deberta-base", "microsoft/deberta-large-mnli"),
        rules=DebertaRules(v1=True),
        task="feature-extraction",
        category="encoder",
        unused=DEBERTA_UNUSED,
        prefix="deberta.",
    ),
]

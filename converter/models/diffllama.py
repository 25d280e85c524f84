"""DiffLlama: Llama with differential attention. Each head attends to both halves of the value
heads (its kv head's index in each half); the first half of the heads minus lambda times the
second half, RMS-normalized per head pair, is the attention output."""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class DiffAttention(Attention):
    """The Llama projections and cache ([kv heads, sequence, head_dim] for K and V), then one
    standard Attention over the values of both halves side by side ([.., 2 * head_dim])."""

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, spec, packed: bool = False):
        super().__init__(cfg, dtype, spec, packed)
        self.dtype, self.eps = dtype, cfg.norm_eps
        self.lambda_init = 0.0  # set by the layer, from its index
        for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
            setattr(self, name, nn.Parameter([cfg.head_dim], dtype))

    def _lambda(self, op):
        def exp_dot(a, b):
            a, b = (op.Cast(t, to=ir.DataType.FLOAT) for t in (a, b))
            return op.Exp(op.ReduceSum(op.Mul(a, b), keepdims=0))

        first = exp_dot(self.lambda_q1, self.lambda_k1)
        full = op.Add(op.Sub(first, exp_dot(self.lambda_q2, self.lambda_k2)), self.lambda_init)
        return op.Cast(full, to=self.dtype)

    def forward(self, op, x, kernel, past_key, past_value):
        spec, d = self.spec, self.spec.head_dim
        q, k, v = self._project(op, x)
        q = kernel.rotate(op, q, spec.heads, spec.rope)
        k = kernel.rotate(op, k, spec.kv_heads, spec.rope)
        q, k, v = (op.Transpose(op.Reshape(t, [0, 0, -1, d]), perm=[0, 2, 1, 3]) for t in (q, k, v))
        key = op.Concat(past_key, k, axis=2)
        value = op.Concat(past_value, v, axis=2)
        v1, v2 = op.Split(value, num_outputs=2, axis=1, _outputs=2)
        both = op.Concat(op.Concat(v1, v1, axis=1), op.Concat(v2, v2, axis=1), axis=-1)
        y = op.Attention(q, key, both, kernel.mask(op, spec), scale=spec.scale)  # [B, H, S, 2d]
        y1, y2 = op.Split(y, num_outputs=2, axis=1, _outputs=2)
        y = op.Sub(y1, op.Mul(self._lambda(op), y2))
        norm_scale = np.full([2 * d], 1.0 - self.lambda_init, np.float32)
        scale = op.Constant(value=ir.tensor(norm_scale.astype(self.dtype.numpy())))
        y = op.RMSNormalization(y, scale, axis=-1, epsilon=self.eps, stash_type=1)
        y = op.Reshape(op.Transpose(y, perm=[0, 2, 1, 3]), [0, 0, -1])
        return self.o_proj(op, y), key, value


class DiffLlamaLayer(DecoderLayer):
    attention_cls = DiffAttention

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__(cfg, index, dtype, ep)
        self.self_attn.lambda_init = 0.8 - 0.6 * math.exp(-0.3 * index)


class DiffLlamaBody(DecoderBody):
    layer_cls = DiffLlamaLayer
    gqa_refused = "differential attention reads two value heads per query head"


class DiffLlamaLM(DecoderLM):
    body_cls = DiffLlamaBody


class DiffLlamaRules(ConfigRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        cfg = super().read(r)
        if cfg.num_key_value_heads % 2:
            r.refuse("num_key_value_heads", "differential attention splits the kv heads in two")
        return cfg


FAMILIES = [
    Family(
        "diffllama",
        DiffLlamaLM,
        "differential attention: two softmax maps per head pair, lambda-weighted, RMS-normed",
        ("kajuma/DiffLlama-0.3B-handcut",),
        rules=DiffLlamaRules(),
    ),
]

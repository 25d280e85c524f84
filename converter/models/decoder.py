"""The generic decoder-only LM: Llama and the families that differ from it by switches.

Llama, Mistral, Qwen2/3, Phi-3, Gemma 1/2/3, Granite and OLMo-2 are this file with
the switches of their `ArchitectureConfig` (norm layout, q/k norms, fused
projections, softcaps, multipliers, sliding windows, local rope).
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import (
    Attention,
    Embedding,
    GatedMLP,
    Linear,
    attention_masks,
    make_norm,
    rotary_cos_sin,
)
from converter.config import SLIDING, ArchitectureConfig

# Norm attributes each layout owns, in the order they apply.
_LAYOUT_NORMS = {
    "pre": ("input_layernorm", "post_attention_layernorm"),
    "sandwich": (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_feedforward_layernorm",
        "post_feedforward_layernorm",
    ),
    "post": ("post_attention_layernorm", "post_feedforward_layernorm"),
    "parallel": ("input_layernorm",),
}


class DecoderLayer(nn.Module):
    attention_cls = Attention
    mlp_cls = GatedMLP

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.layout = cfg.layout
        self.sliding = cfg.layer_types[index] == SLIDING
        rope = cfg.local_rope if self.sliding and cfg.local_rope else cfg.rope
        self.self_attn = self.attention_cls(cfg, dtype, rope.dim if rope else 0)
        self.mlp = self.mlp_cls(cfg, dtype)
        for name in _LAYOUT_NORMS[cfg.layout]:
            setattr(self, name, make_norm(cfg, cfg.hidden_size, dtype))
        self.residual_multiplier = cfg.residual_multiplier

    def _residual(self, op, x, h):
        if self.residual_multiplier != 1.0:
            h = op.Mul(h, self.residual_multiplier)
        return op.Add(x, h)

    def forward(self, op, x, cos, sin, mask, past_key, past_value):
        def attend(h):
            return self.self_attn(op, h, cos, sin, mask, past_key, past_value)

        if self.layout == "parallel":
            h = self.input_layernorm(op, x)
            a, key, value = attend(h)
            return op.Add(op.Add(x, a), self.mlp(op, h)), key, value
        if self.layout == "post":
            a, key, value = attend(x)
            x = self._residual(op, x, self.post_attention_layernorm(op, a))
            m = self.post_feedforward_layernorm(op, self.mlp(op, x))
            return self._residual(op, x, m), key, value
        a, key, value = attend(self.input_layernorm(op, x))
        if self.layout == "sandwich":
            x = self._residual(op, x, self.post_attention_layernorm(op, a))
            m = self.mlp(op, self.pre_feedforward_layernorm(op, x))
            return self._residual(op, x, self.post_feedforward_layernorm(op, m)), key, value
        x = self._residual(op, x, a)
        return self._residual(op, x, self.mlp(op, self.post_attention_layernorm(op, x))), key, value


class DecoderBody(nn.Module):
    layer_cls = DecoderLayer
    final_norm_name = "norm"

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType):
        super().__init__()
        self.cfg, self.dtype = cfg, dtype
        self.embed_tokens = Embedding(
            cfg.vocab_size, cfg.hidden_size, dtype, scale=cfg.embedding_multiplier
        )
        self.layers = nn.ModuleList(
            [self.layer_cls(cfg, i, dtype) for i in range(cfg.num_hidden_layers)]
        )
        setattr(self, self.final_norm_name, make_norm(cfg, cfg.hidden_size, dtype))

    def forward(self, op, input_ids, attention_mask, position_ids, past):
        cfg = self.cfg
        x = self.embed_tokens(op, input_ids)
        windows = {cfg.sliding_window if kind == SLIDING else None for kind in cfg.layer_types}
        masks = attention_masks(op, attention_mask, input_ids, sorted(windows, key=str), self.dtype)
        tables = {}
        presents = []
        for layer, (past_key, past_value) in zip(self.layers, past, strict=True):
            rope = cfg.local_rope if layer.sliding and cfg.local_rope else cfg.rope
            if id(rope) not in tables:
                tables[id(rope)] = (
                    rotary_cos_sin(op, position_ids, rope, self.dtype) if rope else (None, None)
                )
            cos, sin = tables[id(rope)]
            mask = masks[cfg.sliding_window if layer.sliding else None]
            x, key, value = layer(op, x, cos, sin, mask, past_key, past_value)
            presents.append((key, value))
        return getattr(self, self.final_norm_name)(op, x), presents


class DecoderLM(nn.Module):
    """`model` (the body) and `lm_head`, tied to `model.embed_tokens` when the config says so."""

    body_cls = DecoderBody
    lm_head_bias = False

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType):
        super().__init__()
        self.cfg = cfg
        self.model = self.body_cls(cfg, dtype)
        if not cfg.tie_word_embeddings:
            self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, self.lm_head_bias, dtype)

    def embedding_table(self):
        return self.model.embed_tokens.weight

    def forward(self, op, input_ids, attention_mask, position_ids, past):
        hidden, presents = self.model(op, input_ids, attention_mask, position_ids, past)
        return project_logits(op, self, self.cfg, hidden), presents


def project_logits(op, model, cfg: ArchitectureConfig, hidden):
    """lm_head (or the tied embedding table), then logit multiplier and softcap."""
    if cfg.tie_word_embeddings:
        flat = op.Reshape(hidden, [-1, cfg.hidden_size])
        logits = op.Gemm(flat, model.embedding_table(), transB=1)
        batch_seq = op.Shape(hidden, start=0, end=2)
        logits = op.Reshape(logits, op.Concat(batch_seq, [cfg.vocab_size], axis=0))
    else:
        logits = model.lm_head(op, hidden)
    if cfg.logits_multiplier != 1.0:
        logits = op.Mul(logits, cfg.logits_multiplier)
    if cfg.final_logit_softcap:
        cap = cfg.final_logit_softcap
        logits = op.Mul(op.Tanh(op.Div(logits, cap)), cap)
    return logits

"""ESM Cambrian (ESM-C, protein language models): EuroBERT's bidirectional Llama layers
(eurobert.py: rotary q/k over positions 0, 1, ..., SwiGLU) with LayerNorms in place of RMSNorms
(the layers' with biases, the final `norm` without), bias-free LayerNorms `q_norm` / `k_norm`
over the whole q and k projections (all heads at once) before the rotation, and ESM-3's residual
scaling: each branch is divided by sqrt(num_hidden_layers / 36) before it is added. Every
LayerNorm has torch's default eps (1e-5); the config states none. Heads: `lm_head` (dense, GELU,
layer_norm, a decoder with its own bias, never tied), RoBERTa's two-layer `classifier` on the
first token, and `score` for token classification."""

from __future__ import annotations

import dataclasses
import math

import onnx_ir as ir

from converter.components import LayerNorm, Linear
from converter.config.reader import ConfigReader
from converter.models.eurobert import (
    LlamaEncoderAttention,
    LlamaEncoderBody,
    LlamaEncoderConfig,
    LlamaEncoderLayer,
    LlamaEncoderRules,
)
from converter.models.roberta import RobertaModel
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE

LAYER_NORM_EPS = 1e-5  # torch's nn.LayerNorm default, which every ESM-C norm keeps
RESIDUAL_LAYERS = 36  # ESM-3's reference depth: deeper stacks shrink each branch


class EsmcAttention(LlamaEncoderAttention):
    def __init__(self, cfg: LlamaEncoderConfig, dtype: ir.DataType, rope):
        super().__init__(cfg, dtype, rope)
        self.q_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype, bias=False)
        self.k_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype, bias=False)

    def forward(self, op, x, kernel, rotary, bias=None):
        heads = self.heads
        q = rotary(op, self.q_norm(op, self.q_proj(op, x)), heads, self.rope)
        k = rotary(op, self.k_norm(op, self.k_proj(op, x)), heads, self.rope)
        return self.o_proj(op, kernel(op, q, k, self.v_proj(op, x), heads, self.scale, bias))


class EsmcLayer(LlamaEncoderLayer):
    attention_cls = EsmcAttention

    def __init__(self, cfg: LlamaEncoderConfig, dtype: ir.DataType, index: int):
        super().__init__(cfg, dtype, index)
        self.residual_scale = math.sqrt(cfg.num_hidden_layers / RESIDUAL_LAYERS)

    def make_norm(self, cfg: LlamaEncoderConfig, dtype: ir.DataType) -> LayerNorm:
        return LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def forward(self, op, x, kernel, rotary, bias=None):
        attended = self.self_attn(op, self.input_layernorm(op, x), kernel, rotary, bias)
        x = op.Add(x, op.Div(attended, self.residual_scale))
        mixed = self.mlp(op, self.post_attention_layernorm(op, x))
        return op.Add(x, op.Div(mixed, self.residual_scale))


class EsmcBody(LlamaEncoderBody):
    layer_cls = EsmcLayer

    def make_final_norm(self, cfg: LlamaEncoderConfig, dtype: ir.DataType) -> LayerNorm:
        return LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype, bias=False)


class EsmcModel(RobertaModel):
    body_cls = EsmcBody
    body_name = "esmc"
    heads = ("feature-extraction", "fill-mask", "text-classification", "token-classification")

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg: LlamaEncoderConfig, dtype, task: str, tensors) -> None:
        if task == "token-classification":
            self.score = Linear(cfg.hidden_size, cfg.num_labels, cfg.extra["score_bias"], dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def word_table(self):
        return self.body.embed_tokens.weight

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task == "token-classification":
            logits = self.score(op, hidden)
            return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.num_labels])}
        return super().head_outputs(op, hidden, pooled)


class EsmcRules(LlamaEncoderRules):
    def read(self, r: ConfigReader) -> LlamaEncoderConfig:
        cfg = super().read(r)
        if cfg.kv_heads != cfg.num_attention_heads:
            r.refuse("num_key_value_heads", "ESM-C's k_norm spans every head: no grouped keys")
        return dataclasses.replace(cfg, norm_eps=LAYER_NORM_EPS, tied=False)

    def read_extra(self, r: ConfigReader) -> dict:
        return {
            # transformers never ties ESM-C's masked-LM decoder, whatever tie_word_embeddings says
            "tied": False,
            "score_bias": r.bool("token_classification_bias", True),
        }


FAMILIES = [
    Family(
        "esmc",
        EsmcModel,
        "protein LM: Llama-style bidirectional layers with LayerNorms, q/k LayerNorms over all "
        "heads, residual branches scaled by sqrt(layers / 36)",
        ("biohub/ESMC-300M", "biohub/ESMC-6B"),
        rules=EsmcRules(),
        task="feature-extraction",
        category="encoder",
        prefix="esmc.",
    ),
]

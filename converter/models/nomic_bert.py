"""NomicBERT (nomic-embed-text): the rotary post-norm encoder of jina_embeddings_v3.py without
attention biases, a SwiGLU MLP (`fc12` the gate, `fc11` the up projection, `fc2` down, no
biases), under `nomic_bert.encoder.layers.N.attn`; BERT's heads (`cls.predictions` with a
lowercase `layer_norm`, the classifier on the tanh pooler)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.config.reader import ConfigReader
from converter.models.encoder import BertEncoderModel
from converter.models.jina_embeddings_v3 import (
    RotaryBody,
    RotaryEncoderConfig,
    RotaryEncoderRules,
    RotaryLayer,
    RotaryStack,
    refuse_unread,
)
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE


class SwiGLU(nn.Module):
    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        hidden, inner = cfg.hidden_size, cfg.intermediate_size
        self.fc11 = Linear(hidden, inner, False, dtype)  # up
        self.fc12 = Linear(hidden, inner, False, dtype)  # gate
        self.fc2 = Linear(inner, hidden, False, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        gate = activation(op, self.act, self.fc12(op, x))
        return self.fc2(op, op.Mul(gate, self.fc11(op, x)))


class NomicBertLayer(RotaryLayer):
    attention_name, attention_bias = "attn", False
    mlp_cls = SwiGLU


class NomicBertStack(RotaryStack):
    layer_cls = NomicBertLayer


class NomicBertBody(RotaryBody):
    stack_cls = NomicBertStack


class PredictionTransform(nn.Module):
    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.layer_norm(op, activation(op, self.act, self.dense(op, x)))


class Predictions(nn.Module):
    """transform, then the word table and `bias` (tied) or the `decoder` with its own bias."""

    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.transform = PredictionTransform(cfg, dtype)
        tied = cfg.tied
        self.decoder = (
            None if tied else Linear(cfg.hidden_size, cfg.vocab_size, True, dtype, head=True)
        )
        self.bias = nn.Parameter([cfg.vocab_size], dtype) if tied else None

    def forward(self, op, hidden, table):
        x = self.transform(op, hidden)
        if self.decoder is not None:
            return self.decoder(op, x)
        return op.Add(op.MatMul(x, op.Transpose(table, perm=[1, 0])), self.bias)


class MLMHead(nn.Module):
    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.predictions = Predictions(cfg, dtype)

    def forward(self, op, hidden, table):
        return self.predictions(op, hidden, table)


class NomicBertModel(BertEncoderModel):
    body_cls = NomicBertBody
    body_name = "nomic_bert"
    heads = ("feature-extraction", "fill-mask", "text-classification", "token-classification")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.cls = MLMHead(cfg, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task != "fill-mask":
            return super().head_outputs(op, hidden, pooled)
        logits = self.cls(op, hidden, self.word_table())
        return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}


class NomicBertRules(RotaryEncoderRules):
    def read(self, r: ConfigReader) -> RotaryEncoderConfig:
        cfg = super().read(r)
        # the original remote code's keys, which transformers' port leaves unread
        refuse_unread(
            r,
            {
                "n_embd": cfg.hidden_size,
                "n_head": cfg.num_attention_heads,
                "n_layer": cfg.num_hidden_layers,
                "n_inner": cfg.intermediate_size,
                "rotary_emb_base": cfg.rope.theta,
                "rotary_emb_fraction": cfg.rope.dim / cfg.head_dim,
                "rotary_emb_interleaved": False,
                "prenorm": False,
                "qkv_proj_bias": False,
                "mlp_fc1_bias": False,
                "mlp_fc2_bias": False,
                "moe_every_n_layers": 0,
            },
        )
        return cfg


FAMILIES = [
    Family(
        "nomic_bert",
        NomicBertModel,
        "rotary post-norm encoder, packed Wqkv without biases, SwiGLU, BERT's heads",
        ("nomic-ai/nomic-embed-text-v1.5", "nomic-ai/nomic-embed-text-v1"),
        rules=NomicBertRules(),
        task="feature-extraction",
        category="encoder",
        # a pooler a head does not read, a tied decoder's stored copies and the bias an untied
        # one replaces
        unused=(
            r"(nomic_bert\.)?pooler\..*",
            r"cls\.predictions\.decoder\..*",
            r"cls\.predictions\.bias",
        ),
        prefix="nomic_bert.",
    ),
]

"""MPNet: BERT's post-norm layers under its own names (`attention.attn.q/k/v/o`,
`attention.LayerNorm`), RoBERTa-style positions counted from padding index 1 whatever the
pad_token_id, no token types, and one relative-position bias shared by every layer: T5's
bidirectional log buckets (32 of them, up to 128 tokens away, as transformers hard-codes)
into `encoder.relative_attention_bias`, one value per head. Its classifier is RoBERTa's (dense,
tanh, out_proj on the first token); its masked-LM head is `lm_head` (dense, gelu, layer_norm,
the tied decoder, `bias`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import (
    BertEncoderModel,
    BertIntermediate,
    DenseNorm,
    Pooler,
    Table,
    position_ids,
)
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs

PADDING_IDX = 1  # MPNetEmbeddings' own, not config.pad_token_id
BUCKETS, MAX_DISTANCE = 32, 128  # what transformers' compute_position_bias passes


def relative_bucket(relative: np.ndarray) -> np.ndarray:
    """transformers' MPNetEncoder.relative_position_bucket for key - query distances."""
    half = BUCKETS // 2
    n = -relative
    bucket = np.where(n < 0, half, 0)
    n = np.abs(n)
    exact = half // 2
    with np.errstate(divide="ignore"):  # n = 0 takes the exact branch
        scaled = np.log(n.astype(np.float32) / np.float32(exact))
    scaled = scaled / np.float32(math.log(MAX_DISTANCE / exact)) * np.float32(half - exact)
    large = exact + np.where(n < exact, 0, scaled).astype(np.int64)
    return bucket + np.where(n < exact, n, np.minimum(large, half - 1))


class MPNetSelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.q = Linear(size, size, True, dtype)
        self.k = Linear(size, size, True, dtype)
        self.v = Linear(size, size, True, dtype)
        self.o = Linear(size, size, True, dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel, bias):
        q, k, v = self.q(op, x), self.k(op, x), self.v(op, x)
        return self.o(op, kernel(op, q, k, v, self.heads, self.scale, bias))


class MPNetAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.attn = MPNetSelfAttention(cfg, dtype)
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def forward(self, op, x, kernel, bias):
        return self.LayerNorm(op, op.Add(self.attn(op, x, kernel, bias), x))


class MPNetLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = MPNetAttention(cfg, dtype)
        self.intermediate = BertIntermediate(cfg, dtype)
        self.output = DenseNorm(cfg.intermediate_size, cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, bias):
        x = self.attention(op, x, kernel, bias)
        return self.output(op, self.intermediate(op, x), x)


class RelativeBias(nn.Module):
    """`relative_attention_bias` read at each (query, key) pair's bucket: [1, heads, seq, seq]."""

    def __init__(self, rows: int, heads: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([rows, heads], dtype)

    def forward(self, op, x):
        length = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        steps = op.Range(0, length, 1)
        relative = op.Sub(op.Unsqueeze(steps, [0]), op.Unsqueeze(steps, [1]))  # key - query
        table = relative_bucket(np.arange(-MAX_DISTANCE, MAX_DISTANCE + 1))  # saturated beyond
        row = op.Add(op.Clip(relative, -MAX_DISTANCE, MAX_DISTANCE), MAX_DISTANCE)
        buckets = op.Gather(op.Constant(value=ir.tensor(table)), row, axis=0)
        values = op.Gather(self.weight, buckets, axis=0)  # [seq, seq, heads]
        return op.Unsqueeze(op.Transpose(values, perm=[2, 0, 1]), [0])


class MPNetEncoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.layer = nn.ModuleList([MPNetLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)])
        rows = cfg.extra["relative_attention_num_buckets"]
        self.relative_attention_bias = RelativeBias(rows, cfg.num_attention_heads, dtype)

    def forward(self, op, x, kernel):
        bias = self.relative_attention_bias(op, x)
        for layer in self.layer:
            x = layer(op, x, kernel, bias)
        return x


class MPNetEmbeddings(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.word_embeddings = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        self.position_embeddings = Table(cfg.max_position_embeddings, cfg.hidden_size, dtype)
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.positions = dataclasses.replace(
            cfg, pad_token_id=PADDING_IDX, position_offset=PADDING_IDX + 1
        )

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, input_ids):
        positions = position_ids(op, self.positions, input_ids)
        x = op.Add(self.word_embeddings(op, input_ids), self.position_embeddings(op, positions))
        return self.LayerNorm(op, x)


class MPNetBody(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = MPNetEmbeddings(cfg, dtype)
        self.encoder = MPNetEncoder(cfg, dtype)
        self.pooler = Pooler(cfg, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        hidden = self.encoder(op, self.embeddings(op, inputs.input_ids), kernel)
        return hidden, None if self.pooler is None else self.pooler(op, hidden)


class MPNetLMHead(nn.Module):
    """dense, gelu, layer_norm, then the word table and `bias` (tied) or the `decoder` with its
    own bias (untied: transformers unties both)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, tied: bool):
        super().__init__()
        size = cfg.hidden_size
        self.dense = Linear(size, size, True, dtype)
        self.layer_norm = LayerNorm(size, cfg.norm_eps, dtype)
        self.decoder = None if tied else Linear(size, cfg.vocab_size, True, dtype, head=True)
        self.bias = nn.Parameter([cfg.vocab_size], dtype) if tied else None

    def forward(self, op, hidden, table):
        x = self.layer_norm(op, activation(op, "gelu", self.dense(op, hidden)))
        if self.decoder is not None:
            return self.decoder(op, x)
        return op.Add(op.MatMul(x, op.Transpose(table, perm=[1, 0])), self.bias)


class ClassificationHead(nn.Module):
    """out_proj(tanh(dense(first token)))."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.out_proj = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def forward(self, op, hidden):
        first = op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
        return self.out_proj(op, op.Tanh(self.dense(op, first)))


class MPNetModel(BertEncoderModel):
    body_cls = MPNetBody
    body_name = "mpnet"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return task == "feature-extraction" and self.has(tensors, "pooler.dense.weight")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.lm_head = MPNetLMHead(cfg, dtype, cfg.extra["tied"])
        elif task == "text-classification":
            self.classifier = ClassificationHead(cfg, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        cfg = self.cfg
        if self.task == "fill-mask":
            logits = self.lm_head(op, hidden, self.word_table())
            return {"logits": (logits, [BATCH, SEQUENCE, cfg.vocab_size])}
        if self.task == "text-classification":
            return {"logits": (self.classifier(op, hidden), [BATCH, cfg.num_labels])}
        return super().head_outputs(op, hidden, pooled)


class MPNetRules(EncoderRules):
    def __init__(self):
        super().__init__(token_types=False)

    def read_extra(self, r: ConfigReader) -> dict:
        rows = r.int("relative_attention_num_buckets", default=BUCKETS)
        if rows < BUCKETS:
            r.refuse(
                "relative_attention_num_buckets",
                f"transformers reads buckets 0..{BUCKETS - 1} whatever the table's size",
            )
        tied = r.bool("tie_word_embeddings", True)
        return {"relative_attention_num_buckets": rows, "tied": tied}


FAMILIES = [
    Family(
        "mpnet",
        MPNetModel,
        "post-norm encoder with one relative-position bias (T5 buckets) shared by all layers",
        ("sentence-transformers/all-mpnet-base-v2", "microsoft/mpnet-base"),
        rules=MPNetRules(),
        task="feature-extraction",
        category="encoder",
        # the buffer, a pooler the head does not read, a tied decoder's stored copies and the
        # bias an untied one replaces
        unused=(
            r"(mpnet\.)?embeddings\.position_ids",
            r"(mpnet\.)?pooler\..*",
            r"lm_head\.decoder\..*",
            r"lm_head\.bias",
        ),
        prefix="mpnet.",
    ),
]

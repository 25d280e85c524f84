"""DistilBERT: BERT's post-norm layers under other names (`q_lin`.. `out_lin`, `sa_layer_norm`,
`ffn.lin1/lin2`, `output_layer_norm`), no token types, LayerNorm eps fixed at 1e-12; its
classifier reads relu(pre_classifier(first token)), its masked-LM head is `vocab_transform`,
`vocab_layer_norm` and `vocab_projector` (its weight the word table's under tie_word_embeddings,
its bias its own).
`sinusoidal_pos_embds` only initializes the position table, which checkpoints store."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Bias
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEmbeddings, BertEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs

EPS = 1e-12  # transformers hard-codes it; config.json has no key for it


class DistilBertSelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.q_lin = Linear(size, size, True, dtype)
        self.k_lin = Linear(size, size, True, dtype)
        self.v_lin = Linear(size, size, True, dtype)
        self.out_lin = Linear(size, size, True, dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel):
        q, k, v = self.q_lin(op, x), self.k_lin(op, x), self.v_lin(op, x)
        return self.out_lin(op, kernel(op, q, k, v, self.heads, self.scale))


class FFN(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.lin1 = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.lin2 = Linear(cfg.intermediate_size, cfg.hidden_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.lin2(op, activation(op, self.act, self.lin1(op, x)))


class TransformerBlock(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = DistilBertSelfAttention(cfg, dtype)
        self.sa_layer_norm = LayerNorm(cfg.hidden_size, EPS, dtype)
        self.ffn = FFN(cfg, dtype)
        self.output_layer_norm = LayerNorm(cfg.hidden_size, EPS, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel):
        x = self.sa_layer_norm(op, op.Add(self.attention(op, x, kernel), x))
        return self.output_layer_norm(op, op.Add(self.ffn(op, x), x))


class Transformer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.layer = nn.ModuleList(
            [TransformerBlock(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        )

    def forward(self, op, x, kernel):
        for layer in self.layer:
            x = layer(op, x, kernel)
        return x


class DistilBertBody(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg, dtype)  # word + position tables, LayerNorm
        self.transformer = Transformer(cfg, dtype)
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        return self.transformer(op, self.embeddings(op, inputs), kernel), None


class DistilBertModel(BertEncoderModel):
    body_cls = DistilBertBody
    body_name = "distilbert"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        size = cfg.hidden_size
        if task == "fill-mask":
            self.vocab_transform = Linear(size, size, True, dtype)
            self.vocab_layer_norm = LayerNorm(size, EPS, dtype)
            if cfg.extra["tied"]:  # the word table, and a bias of its own
                self.vocab_projector = Bias(cfg.vocab_size, dtype)
            else:
                self.vocab_projector = Linear(size, cfg.vocab_size, True, dtype, head=True)
            return
        if task == "text-classification":
            self.pre_classifier = Linear(size, size, True, dtype)
        super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task == "text-classification":
            first = op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
            pooled = op.Relu(self.pre_classifier(op, first))
        if self.task != "fill-mask":
            return super().head_outputs(op, hidden, pooled)
        x = activation(op, self.cfg.activation, self.vocab_transform(op, hidden))
        x = self.vocab_layer_norm(op, x)
        if isinstance(self.vocab_projector, Linear):
            logits = self.vocab_projector(op, x)
        else:
            table = op.Transpose(self.word_table(), perm=[1, 0])
            logits = self.vocab_projector(op, op.MatMul(x, table))
        return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}


class DistilBertRules(EncoderRules):
    def read(self, r) -> EncoderConfig:
        return dataclasses.replace(super().read(r), norm_eps=EPS)

    def read_extra(self, r) -> dict:
        return {"tied": r.bool("tie_word_embeddings", True)}


FAMILIES = [
    Family(
        "distilbert",
        DistilBertModel,
        "BERT's post-norm layers renamed, no token types, ReLU pre-classifier",
        (
            "distilbert/distilbert-base-uncased",
            "distilbert/distilbert-base-uncased-finetuned-sst-2-english",
        ),
        rules=DistilBertRules(token_types=False),
        task="feature-extraction",
        category="encoder",
        # a tied projector's copy of the word table that some checkpoints store
        unused=(r"(distilbert\.)?embeddings\.position_ids", r"vocab_projector\.weight"),
        prefix="distilbert.",
    ),
]

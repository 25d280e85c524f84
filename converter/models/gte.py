"""GTE (transformers' native `gte`): the rotary post-norm encoder of jina_embeddings_v3.py under
`gte.encoder.layer.N.attention.qkv_proj/o_proj`, `attn_ln`, `mlp_ln`, its embeddings normed in
`embeddings.LayerNorm`; a GeGLU-style MLP (`up_gate_proj` packing up | gate without bias,
`down_proj` with one); `lm_head` (dense, gelu, `norm`, the decoder with its own bias) and the
classifier on the tanh pooler."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.linear import Bias
from converter.models.encoder import BertEncoderModel
from converter.models.jina_embeddings_v3 import (
    PackedAttention,
    RotaryBody,
    RotaryEncoderConfig,
    RotaryEncoderRules,
    RotaryLayer,
    RotaryStack,
)
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE


class GteAttention(PackedAttention):
    qkv_name, out_name = "qkv_proj", "o_proj"


class GatedMLP(nn.Module):
    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        hidden, inner = cfg.hidden_size, cfg.intermediate_size
        self.up_gate_proj = Linear(hidden, 2 * inner, False, dtype)
        self.down_proj = Linear(inner, hidden, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        up, gate = op.Split(self.up_gate_proj(op, x), axis=-1, num_outputs=2, _outputs=2)
        return self.down_proj(op, op.Mul(activation(op, self.act, gate), up))


class GteLayer(RotaryLayer):
    attention_name, first_norm, second_norm = "attention", "attn_ln", "mlp_ln"
    attention_cls = GteAttention
    mlp_cls = GatedMLP


class GteStack(RotaryStack):
    layers_name, layer_cls = "layer", GteLayer


class GteBody(RotaryBody):
    stack_cls, norm_name = GteStack, None


class GteLMHead(nn.Module):
    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.dense = Linear(size, size, True, dtype)
        self.norm = LayerNorm(size, cfg.norm_eps, dtype)
        # tied: the word table, and the decoder's own bias
        untied = Linear(size, cfg.vocab_size, True, dtype, head=True)
        self.decoder = Bias(cfg.vocab_size, dtype) if cfg.tied else untied
        self.tied = cfg.tied

    def forward(self, op, hidden, table):
        x = self.norm(op, activation(op, "gelu", self.dense(op, hidden)))
        if not self.tied:
            return self.decoder(op, x)
        return self.decoder(op, op.MatMul(x, op.Transpose(table, perm=[1, 0])))


class GteModel(BertEncoderModel):
    body_cls = GteBody
    body_name = "gte"
    heads = ("feature-extraction", "fill-mask", "text-classification", "token-classification")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.lm_head = GteLMHead(cfg, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task != "fill-mask":
            return super().head_outputs(op, hidden, pooled)
        logits = self.lm_head(op, hidden, self.word_table())
        return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}


FAMILIES = [
    Family(
        "gte",
        GteModel,
        "rotary post-norm encoder, packed qkv_proj, gated MLP, BERT's classifier on the pooler",
        ("alibaba-nlp-community/gte-multilingual-base",),
        rules=RotaryEncoderRules(),
        task="feature-extraction",
        category="encoder",
        # a pooler a head does not read, a tied decoder's stored copy of the word table
        unused=(r"(gte\.)?pooler\..*", r"lm_head\.decoder\.weight"),
        prefix="gte.",
    ),
]

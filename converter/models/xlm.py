"""XLM (masked-LM checkpoints; FlauBERT, flaubert.py, is the same): words + learned positions
and a LayerNorm, post-norm layers kept in parallel lists (`attentions.N.q_lin..out_lin`,
`layer_norm1.N`, `ffns.N.lin1/lin2`, `layer_norm2.N`), the hidden states zeroed on padding
after the embeddings and every layer; MLP width 4 * emb_dim, GELU or ReLU (gelu_activation).
Heads: `pred_layer.proj` (the word table, its own bias), `sequence_summary` (a token or the mean,
projected, activated), `classifier`, `qa_outputs`. The tokenizer gives no token types and the
text task no `langs`, so models with language embeddings are refused."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Bias
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEncoderModel, Table, position_ids
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TEXT_TASKS, TextInputs


class MultiHeadAttention(nn.Module):
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


class TransformerFFN(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.lin1 = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.lin2 = Linear(cfg.intermediate_size, cfg.hidden_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.lin2(op, activation(op, self.act, self.lin1(op, x)))


class XlmBody(nn.Module):
    """`transformer`: the embeddings and the layers' parallel lists."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        size, layers = cfg.hidden_size, range(cfg.num_hidden_layers)
        self.position_embeddings = Table(cfg.max_position_embeddings, size, dtype)
        self.embeddings = Table(cfg.vocab_size, size, dtype)
        self.layer_norm_emb = LayerNorm(size, cfg.norm_eps, dtype)
        self.attentions = nn.ModuleList([MultiHeadAttention(cfg, dtype) for _ in layers])
        self.layer_norm1 = nn.ModuleList([LayerNorm(size, cfg.norm_eps, dtype) for _ in layers])
        self.ffns = nn.ModuleList([TransformerFFN(cfg, dtype) for _ in layers])
        self.layer_norm2 = nn.ModuleList([LayerNorm(size, cfg.norm_eps, dtype) for _ in layers])
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms of a layer read a sum, and the embedding norm words + positions
        layers = self.cfg.num_hidden_layers
        return {
            "skip_norms": 1 + 2 * layers if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: layers if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, inputs: TextInputs):
        ids = inputs.input_ids
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        keep = op.Unsqueeze(op.Cast(inputs.attention_mask, to=self.dtype), [2])
        positions = self.position_embeddings(op, position_ids(op, self.cfg, ids))
        x = op.Mul(self.layer_norm_emb(op, op.Add(self.embeddings(op, ids), positions)), keep)
        for attention, norm1, ffn, norm2 in zip(
            self.attentions, self.layer_norm1, self.ffns, self.layer_norm2, strict=True
        ):
            x = norm1(op, op.Add(x, attention(op, x, kernel)))
            x = op.Mul(norm2(op, op.Add(x, ffn(op, x))), keep)
        return x, None


class PredLayer(nn.Module):
    """`proj`: the word table (tied) and its own bias."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.tied = cfg.extra["tied"]
        size = cfg.vocab_size
        untied = Linear(cfg.hidden_size, size, True, dtype, head=True)
        self.proj = Bias(size, dtype) if self.tied else untied

    def forward(self, op, hidden, table):
        if not self.tied:
            return self.proj(op, hidden)
        return self.proj(op, op.MatMul(hidden, op.Transpose(table, perm=[1, 0])))


class SequenceSummary(nn.Module):
    """The first or last token or the mean over every position, then `summary` (when
    summary_use_proj) and summary_activation."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s = cfg.extra["summary"]
        width = cfg.num_labels if s["to_labels"] else cfg.hidden_size
        self.summary = Linear(cfg.hidden_size, width, True, dtype) if s["proj"] else None
        self.kind, self.act, self.width = s["type"], s["activation"], width

    def forward(self, op, hidden):
        if self.kind == "mean":
            x = op.ReduceMean(hidden, [1], keepdims=0)
        else:
            index = 0 if self.kind == "first" else -1
            x = op.Gather(hidden, index, axis=1)
        if self.summary is not None:
            x = self.summary(op, x)
        return x if self.act is None else activation(op, self.act, x)


class XlmModel(BertEncoderModel):
    body_cls = XlmBody
    body_name = "transformer"
    heads = TEXT_TASKS

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.pred_layer = PredLayer(cfg, dtype)
        elif task == "text-classification":
            self.sequence_summary = SequenceSummary(cfg, dtype)
        elif task == "question-answering":
            self.qa_outputs = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def word_table(self):
        return self.body.embeddings.weight

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task == "fill-mask":
            logits = self.pred_layer(op, hidden, self.word_table())
            return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}
        if self.task == "text-classification":
            logits = self.sequence_summary(op, hidden)
            return {"logits": (logits, [BATCH, self.sequence_summary.width])}
        return super().head_outputs(op, hidden, pooled)


class XlmRules(EncoderRules):
    def __init__(self):
        super().__init__(aliases={"emb_dim": "hidden_size"}, token_types=False)

    def read(self, r: ConfigReader) -> EncoderConfig:
        for key, why in (
            ("causal", "causal-LM checkpoints are not converted as encoders"),
            ("asm", "an adaptive-softmax prediction layer is not built"),
        ):
            if r.bool(key, False):
                r.refuse(key, why)
        if not r.bool("is_encoder", True):
            r.refuse("is_encoder", "XLM decoders are not built")
        if r.int("n_langs", default=1) > 1 and r.bool("use_lang_emb", True):
            r.refuse("n_langs", "language embeddings need a `langs` input the text task lacks")
        # the MLP is four times as wide as emb_dim, whatever else config.json says
        r.raw["intermediate_size"] = 4 * r.int("emb_dim", "hidden_size")
        cfg = super().read(r)
        act = "gelu" if r.bool("gelu_activation", True) else "relu"
        return dataclasses.replace(cfg, activation=act)

    def read_extra(self, r: ConfigReader) -> dict:
        kind = r.str("summary_type", default="first")
        if kind not in ("first", "last", "mean", "cls_index"):
            r.refuse("summary_type", "the summary is a token or the mean")
        act = r.str("summary_activation") if r.raw.get("summary_activation") else None
        summary = {
            # without a cls_index input, cls_index reads the last token
            "type": "last" if kind == "cls_index" else kind,
            "proj": r.bool("summary_use_proj", True),
            "to_labels": r.bool("summary_proj_to_labels", True),
            "activation": act,
        }
        return {"summary": summary, "tied": r.bool("tie_word_embeddings", True)}


FAMILIES = [
    Family(
        "xlm",
        XlmModel,
        "post-norm encoder in parallel layer lists, hidden states zeroed on padding",
        ("FacebookAI/xlm-mlm-en-2048", "FacebookAI/xlm-mlm-17-1280"),
        rules=XlmRules(),
        task="feature-extraction",
        category="encoder",
        # a tied projection's stored copy of the word table
        unused=(r"(transformer\.)?position_ids", r"pred_layer\.proj\.weight"),
        prefix="transformer.",
    ),
]

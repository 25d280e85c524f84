"""RoBERTa and the encoders that are RoBERTa under another name (XLM-RoBERTa, CamemBERT,
Data2Vec-Text, I-BERT in float mode): BERT's layers with padding-aware positions (padding_idx + 1
onwards, counting only real tokens), no token_type_ids input (their tokenizers give none, so every
token reads row 0 of the type table), no pooler under the heads, `lm_head` for the masked LM and a
two-layer `classifier` on the first token."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.models.encoder import BertEncoderModel, first_token
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE


class TiedRules(EncoderRules):
    """Encoder rules that also read tie_word_embeddings (`cfg.extra["tied"]`): whether the
    masked-LM decoder is the word table, as transformers ties it."""

    def read_extra(self, r) -> dict:
        return {"tied": r.bool("tie_word_embeddings", True)}


class RobertaRules(TiedRules):
    def __init__(self, **traits) -> None:
        super().__init__(roberta_positions=True, token_type_input=False, **traits)


class RobertaLMHead(nn.Module):
    """dense -> gelu -> layer_norm -> decoder. Tied, the decoder is the word table and its bias
    `lm_head.bias` (transformers ties decoder.bias to it); untied, `decoder` has its own
    (`decoder_bias`; ESM's has none and adds lm_head.bias either way)."""

    decoder_bias = True

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, vocab = cfg.hidden_size, cfg.vocab_size
        self.dense = Linear(size, size, True, dtype)
        self.layer_norm = LayerNorm(size, cfg.norm_eps, dtype)
        tied = cfg.extra["tied"]
        self.decoder = None if tied else Linear(size, vocab, self.decoder_bias, dtype)
        own_bias = tied or not self.decoder_bias
        self.bias = nn.Parameter([vocab], dtype) if own_bias else None

    def forward(self, op, hidden, table):
        x = self.layer_norm(op, activation(op, "gelu", self.dense(op, hidden)))
        if self.decoder is None:
            logits = op.MatMul(x, op.Transpose(table, perm=[1, 0]))
        else:
            logits = self.decoder(op, x)
        return logits if self.bias is None else op.Add(logits, self.bias)


class ClassificationHead(nn.Module):
    """The first token through dense -> act -> out_proj (RoBERTa: tanh; ELECTRA: gelu)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, act: str = "tanh"):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.out_proj = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        self.act = act

    def forward(self, op, hidden):
        x = self.dense(op, first_token(op, hidden))
        x = op.Tanh(x) if self.act == "tanh" else activation(op, self.act, x)
        return self.out_proj(op, x)


class RobertaModel(BertEncoderModel):
    """RoBERTa's heads on a BERT-layout body: `lm_head`, the two-layer `classifier`; the pooler
    only where a headless checkpoint has one (feature-extraction)."""

    body_name = "roberta"
    lm_head_cls = RobertaLMHead
    classifier_act = "tanh"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return task == "feature-extraction" and self.has(tensors, "pooler.dense.weight")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.lm_head = self.lm_head_cls(cfg, dtype)
        elif task == "text-classification":
            self.classifier = ClassificationHead(cfg, dtype, self.classifier_act)
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


class Data2VecTextModel(RobertaModel):
    body_name = "data2vec_text"


def roberta_unused(body: str) -> tuple[str, ...]:
    """Tensors a RoBERTa-style checkpoint may hold that transformers never reads: old position
    and token-type buffers, a pooler the heads leave, and whichever of lm_head.bias /
    lm_head.decoder the tying setting drops."""
    return (
        rf"({body}\.)?embeddings\.(position_ids|token_type_ids)",
        rf"({body}\.)?pooler\..*",
        r"lm_head\.(bias|decoder\.weight|decoder\.bias)",
    )


def _roberta(model_type, model_class, notes, examples, body="roberta") -> Family:
    return Family(
        model_type,
        model_class,
        notes,
        examples,
        rules=RobertaRules(),
        task="feature-extraction",
        category="encoder",
        unused=roberta_unused(body),
        prefix=f"{body}.",
    )


FAMILIES = [
    _roberta(
        "roberta",
        RobertaModel,
        "BERT layers, padding-aware positions, no token types",
        ("FacebookAI/roberta-base", "sentence-transformers/all-distilroberta-v1"),
    ),
    _roberta(
        "xlm-roberta",
        RobertaModel,
        "multilingual RoBERTa",
        ("FacebookAI/xlm-roberta-base", "BAAI/bge-m3", "intfloat/multilingual-e5-large"),
    ),
    _roberta("camembert", RobertaModel, "French RoBERTa", ("almanach/camembert-base",)),
    _roberta(
        "data2vec-text",
        Data2VecTextModel,
        "RoBERTa layout under data2vec_text",
        ("facebook/data2vec-text-base",),
        body="data2vec_text",
    ),
]

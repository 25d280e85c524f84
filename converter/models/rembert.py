"""RemBERT: BERT under `rembert` with narrower input embeddings (input_embedding_size) mapped to
the hidden size by encoder.embedding_hidden_mapping_in, and an untied masked-LM head of its own
width (output_embedding_size): cls.predictions dense -> act -> LayerNorm -> decoder."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.models.encoder import BertBody, BertEncoder, BertEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE


class RemBertRules(EncoderRules):
    def __init__(self) -> None:
        super().__init__(aliases={"input_embedding_size": "embedding_size"})

    def read_extra(self, r) -> dict:
        return {"output_embedding_size": r.int("output_embedding_size")}


class RemBertEncoder(BertEncoder):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.embedding_hidden_mapping_in = Linear(cfg.embedding_size, cfg.hidden_size, True, dtype)

    def forward(self, op, x, kernel, bias=None):
        return super().forward(op, self.embedding_hidden_mapping_in(op, x), kernel, bias)


class RemBertBody(BertBody):
    encoder_cls = RemBertEncoder


class RemBertPredictionHead(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        width = cfg.extra["output_embedding_size"]
        self.dense = Linear(cfg.hidden_size, width, True, dtype)
        self.LayerNorm = LayerNorm(width, cfg.norm_eps, dtype)
        self.decoder = Linear(width, cfg.vocab_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, hidden):
        x = self.LayerNorm(op, activation(op, self.act, self.dense(op, hidden)))
        return self.decoder(op, x)


class RemBertPredictions(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.predictions = RemBertPredictionHead(cfg, dtype)

    def forward(self, op, hidden):
        return self.predictions(op, hidden)


class RemBertModel(BertEncoderModel):
    body_cls = RemBertBody
    body_name = "rembert"

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.cls = RemBertPredictions(cfg, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task == "fill-mask":
            logits = self.cls(op, hidden)
            return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}
        return super().head_outputs(op, hidden, pooled)


FAMILIES = [
    Family(
        "rembert",
        RemBertModel,
        "BERT with narrow input embeddings mapped in, an untied masked-LM head of its own width",
        ("google/rembert",),
        rules=RemBertRules(),
        task="feature-extraction",
        category="encoder",
        unused=(r"(rembert\.)?embeddings\.position_ids", r"(rembert\.)?pooler\..*"),
        prefix="rembert.",
    ),
]

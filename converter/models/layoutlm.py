"""LayoutLM (v1): BERT under `layoutlm` whose embeddings also add each token's box: the input
bbox [batch_size, sequence_length, 4] int64 holds (x0, y0, x1, y1) on the 0-1000 page grid (the
name and shape Optimum and Transformers.js feed), read through x_, y_, h_ (y1 - y0) and w_
(x1 - x0) position tables of max_2d_position_embeddings rows."""

from __future__ import annotations

from typing import ClassVar

import onnx_ir as ir

from converter.config.encoder import EncoderRules
from converter.models.encoder import BertBody, BertEmbeddings, BertEncoderModel, Table
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE


class LayoutLMRules(EncoderRules):
    def read_extra(self, r) -> dict:
        return {"grid": r.int("max_2d_position_embeddings", default=1024)}


class LayoutLMEmbeddings(BertEmbeddings):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        grid, size = cfg.extra["grid"], cfg.embedding_size
        for axis in "xyhw":
            setattr(self, f"{axis}_position_embeddings", Table(grid, size, dtype))

    def token_sum(self, op, inputs):
        bbox = inputs.extra["bbox"]
        x0, y0, x1, y1 = (op.Gather(bbox, i, axis=2) for i in range(4))
        rows = [
            self.x_position_embeddings(op, x0),
            self.y_position_embeddings(op, y0),
            self.x_position_embeddings(op, x1),
            self.y_position_embeddings(op, y1),
            self.h_position_embeddings(op, op.Sub(y1, y0)),
            self.w_position_embeddings(op, op.Sub(x1, x0)),
        ]
        x = super().token_sum(op, inputs)
        for row in rows:
            x = op.Add(x, row)
        return x


class LayoutLMBody(BertBody):
    embeddings_cls = LayoutLMEmbeddings


class LayoutLMModel(BertEncoderModel):
    body_cls = LayoutLMBody
    body_name = "layoutlm"
    extra_inputs: ClassVar[dict] = {"bbox": (ir.DataType.INT64, [BATCH, SEQUENCE, 4])}


FAMILIES = [
    Family(
        "layoutlm",
        LayoutLMModel,
        "BERT plus 2-D position tables read at each token's box (input bbox)",
        ("microsoft/layoutlm-base-uncased",),
        rules=LayoutLMRules(),
        task="feature-extraction",
        category="encoder",
        unused=(
            r"(layoutlm\.)?embeddings\.(position_ids|token_type_ids)",
            r"(layoutlm\.)?pooler\..*",
        ),
        prefix="layoutlm.",
    ),
]

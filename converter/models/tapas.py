"""TAPAS: BERT over a flattened table. token_type_ids is [batch, sequence, 7] (segment, column,
row, previous label, column rank, inverse column rank, numeric relation), each column read from
its own table (`token_type_embeddings_{i}`, sized by type_vocab_sizes); with
reset_position_index_per_cell (the default) a token's position counts from the first token of
its cell (the tokens of the row sharing its column and row ids), capped at the last position.
Heads: BERT's masked-LM head and a classifier over the pooler; the question-answering head
(cell selection and aggregation over cell segments) is not built."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.bert import BERT_UNUSED
from converter.models.encoder import BertBody, BertEncoderModel, Table
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs

TYPES = "token_type_ids"
COLUMN, ROW = 1, 2  # the token-type columns a cell is found by


def cell_positions(op, types, max_positions: int):
    """[batch, sequence]: each token's distance from the first token of its cell (same column
    and row id in its row), at most max_positions - 1."""
    column, row = op.Gather(types, COLUMN, axis=2), op.Gather(types, ROW, axis=2)
    same_cell = op.And(
        op.Equal(op.Unsqueeze(column, [2]), op.Unsqueeze(column, [1])),
        op.Equal(op.Unsqueeze(row, [2]), op.Unsqueeze(row, [1])),
    )
    length = op.Squeeze(op.Shape(types, start=1, end=2), [0])
    steps = op.Range(0, length, 1)
    first = op.ReduceMin(op.Where(same_cell, steps, length), [2], keepdims=0)
    return op.Min(op.Sub(steps, first), max_positions - 1)


class TapasEmbeddings(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.word_embeddings = Table(cfg.vocab_size, size, dtype)
        self.position_embeddings = Table(cfg.max_position_embeddings, size, dtype)
        self.type_tables = len(cfg.extra["type_vocab_sizes"])
        for i, rows in enumerate(cfg.extra["type_vocab_sizes"]):
            setattr(self, f"token_type_embeddings_{i}", Table(rows, size, dtype))
        self.LayerNorm = LayerNorm(size, cfg.norm_eps, dtype)
        self.cfg = cfg

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}  # the norm reads a sum

    def forward(self, op, inputs: TextInputs):
        types, ids = inputs.extra[TYPES], inputs.input_ids
        if self.cfg.extra["reset_position_index_per_cell"]:
            positions = cell_positions(op, types, self.cfg.max_position_embeddings)
        else:
            length = op.Squeeze(op.Shape(ids, start=1, end=2), [0])
            positions = op.Unsqueeze(op.Range(0, length, 1), [0])
        x = op.Add(self.word_embeddings(op, ids), self.position_embeddings(op, positions))
        for i in range(self.type_tables):
            table = getattr(self, f"token_type_embeddings_{i}")
            x = op.Add(x, table(op, op.Gather(types, i, axis=2)))
        return self.LayerNorm(op, x)


class TapasBody(BertBody):
    embeddings_cls = TapasEmbeddings


class TapasModel(BertEncoderModel):
    body_cls = TapasBody
    body_name = "tapas"
    heads = ("feature-extraction", "fill-mask", "text-classification")

    def __init__(self, cfg, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__(cfg, dtype, ep, task, tensors)
        columns = len(cfg.extra["type_vocab_sizes"])
        self.extra_inputs = {TYPES: (ir.DataType.INT64, [BATCH, SEQUENCE, columns])}


class TapasRules(EncoderRules):
    def __init__(self):
        # the token types are the model's own 3-D input, not BERT's table
        super().__init__(token_types=False)

    def read(self, r: ConfigReader) -> EncoderConfig:
        if r.bool("add_cross_attention", False):
            r.refuse("add_cross_attention", "cross-attention to an encoder is not built")
        return super().read(r)

    def read_extra(self, r: ConfigReader) -> dict:
        sizes = r.raw.get("type_vocab_sizes")
        if (
            not isinstance(sizes, list)
            or len(sizes) <= ROW
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes)
        ):
            raise ConfigError(
                f"'type_vocab_sizes' = {sizes!r} must list a positive table size per token-type "
                "column (at least segment, column and row)"
            )
        return {
            "type_vocab_sizes": tuple(sizes),
            "reset_position_index_per_cell": r.bool("reset_position_index_per_cell", True),
        }


FAMILIES = [
    Family(
        "tapas",
        TapasModel,
        "BERT over a flattened table: 7 token-type columns, each its own table, positions "
        "restarting in every cell (input_ids, attention_mask, token_type_ids [batch, seq, 7])",
        ("google/tapas-base", "google/tapas-base-finetuned-tabfact"),
        rules=TapasRules(),
        task="feature-extraction",
        category="encoder",
        unused=(
            *(p.replace(r"(bert\.)?", r"(tapas\.)?") for p in BERT_UNUSED),
            # the question-answering head's (cell selection, aggregation), never built
            r"(column_)?output_(bias|weights)",
            r"aggregation_classifier\..*",
        ),
        prefix="tapas.",
    ),
]

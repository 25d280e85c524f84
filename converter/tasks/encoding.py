"""Encoder tasks: one bidirectional graph, saved where Transformers.js, Optimum and
sentence-transformers look for it (`onnx/model.onnx`; other dtypes beside it).

Text tasks read input_ids, attention_mask [batch_size, sequence_length] and, where the family
has token types, token_type_ids; a model adds inputs of its own by `extra_inputs` ({name:
(dtype, dims)}: LayoutLM's bbox [batch_size, sequence_length, 4]). What comes out depends on
the head:
  feature-extraction     last_hidden_state [batch_size, sequence_length, hidden]
                         (+ pooler_output [batch_size, hidden] where the model has a pooler)
  fill-mask              logits [batch_size, sequence_length, vocab]
  text-classification    logits [batch_size, num_labels]
  token-classification   logits [batch_size, sequence_length, num_labels]
  question-answering     start_logits, end_logits [batch_size, sequence_length]
The model returns {output name: (value, symbolic dims)}; the task names the graph's I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.tasks.base import Component, as_model, new_graph, set_float32_output

ENCODER_FILE = "onnx/model.onnx"
BATCH, SEQUENCE = "batch_size", "sequence_length"

TEXT_TASKS = (
    "feature-extraction",
    "fill-mask",
    "text-classification",
    "token-classification",
    "question-answering",
)


@dataclass
class TextInputs:
    input_ids: ir.Value
    attention_mask: ir.Value
    token_type_ids: ir.Value | None  # None: the family reads no token types
    extra: dict[str, ir.Value] = field(default_factory=dict)  # the model's `extra_inputs`


@dataclass(frozen=True)
class TextEncodingTask:
    name: str

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        graph = new_graph()
        builder = GraphBuilder(graph)
        i64, seq = ir.DataType.INT64, [BATCH, SEQUENCE]
        input_ids = builder.input("input_ids", i64, seq)
        attention_mask = builder.input("attention_mask", i64, seq)
        token_types = builder.input("token_type_ids", i64, seq) if cfg.token_type_input else None
        extra = {
            name: builder.input(name, input_type, dims)
            for name, (input_type, dims) in getattr(model, "extra_inputs", {}).items()
        }
        outputs = model(builder.op, TextInputs(input_ids, attention_mask, token_types, extra))
        for name, (value, dims) in outputs.items():
            set_float32_output(builder, value, name, dims, dtype)
        return [Component("encoder", ENCODER_FILE, as_model(graph), model, {})]

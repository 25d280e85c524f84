"""Tasks: the graph's I/O contract. Only this module names graph inputs and outputs."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.config import ArchitectureConfig

OPSET = 23


@dataclass(frozen=True)
class TextGenerationTask:
    """Causal LM with a KV cache, in the layout onnxruntime-genai feeds.

    inputs:  input_ids [batch, sequence_length], attention_mask [batch, total_sequence_length],
             position_ids [batch, sequence_length],
             past_key_values.{i}.key / .value [batch, num_kv_heads, past_sequence_length, head_dim]
    outputs: logits [batch, sequence_length, vocab_size],
             present.{i}.key / .value [batch, num_kv_heads, total_sequence_length, head_dim]
    """

    name: str = "text-generation"
    past_key: str = "past_key_values.%d.key"
    past_value: str = "past_key_values.%d.value"
    present_key: str = "present.%d.key"
    present_value: str = "present.%d.value"

    def build_graph(self, model, cfg: ArchitectureConfig, dtype: ir.DataType) -> ir.Model:
        graph = ir.Graph([], [], nodes=[], opset_imports={"": OPSET}, name="main_graph")
        builder = GraphBuilder(graph)
        i64 = ir.DataType.INT64
        input_ids = builder.input("input_ids", i64, ["batch", "sequence_length"])
        attention_mask = builder.input("attention_mask", i64, ["batch", "total_sequence_length"])
        position_ids = builder.input("position_ids", i64, ["batch", "sequence_length"])
        cache_shape = ["batch", cfg.num_key_value_heads, "past_sequence_length", cfg.head_dim]
        past = [
            (
                builder.input(self.past_key % i, dtype, cache_shape),
                builder.input(self.past_value % i, dtype, cache_shape),
            )
            for i in range(cfg.num_hidden_layers)
        ]
        logits, presents = model(builder.op, input_ids, attention_mask, position_ids, past)
        builder.add_output(logits, "logits")
        logits.shape = ir.Shape(["batch", "sequence_length", cfg.vocab_size])
        logits.type = ir.TensorType(dtype)
        present_shape = ir.Shape(
            ["batch", cfg.num_key_value_heads, "total_sequence_length", cfg.head_dim]
        )
        for i, (key, value) in enumerate(presents):
            for value_out, pattern in ((key, self.present_key), (value, self.present_value)):
                builder.add_output(value_out, pattern % i)
                value_out.shape = present_shape
                value_out.type = ir.TensorType(dtype)
        return ir.Model(graph, ir_version=10, producer_name="mobius")

    def io_names(self) -> dict:
        """The names genai_config.json declares for this task."""
        return {
            "inputs": {
                "input_ids": "input_ids",
                "attention_mask": "attention_mask",
                "position_ids": "position_ids",
                "past_key_names": self.past_key,
                "past_value_names": self.past_value,
            },
            "outputs": {
                "logits": "logits",
                "present_key_names": self.present_key,
                "present_value_names": self.present_value,
            },
        }


TASKS = {"text-generation": TextGenerationTask()}

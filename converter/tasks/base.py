"""What a task produces: components, each one ONNX graph with its role, file and I/O names."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import onnx_ir as ir
from onnxscript import nn

from converter.components.cache import LayerCache

OPSET = 23
# the file-name suffix Transformers.js and Optimum give each dtype's graph
DTYPE_SUFFIXES = {"f32": "", "f16": "_fp16", "bf16": "_bf16", "int8": "_quantized", "int4": "_q4"}


@dataclass
class Component:
    """One graph of a package. `module` owns its weights (several components may share one:
    weights bind once across all of them); `io` holds the input/output names its runtime
    reads, as genai_config.json spells them; `caches` is each layer's cache, as declared by
    the model."""

    role: str  # "decoder" | "encoder" | "vision" | "embedding"
    filename: str  # where the package saves the graph, e.g. "model.onnx"
    model: ir.Model
    module: nn.Module
    io: dict[str, Any]
    caches: list[LayerCache] = field(default_factory=list)

    def saved_as(self, dtype: str) -> Component:
        """Files under `onnx/` follow the Transformers.js / Optimum naming of their dtype
        (`onnx/model.onnx` in f32, `onnx/model_fp16.onnx`, ...); others keep their name."""
        if not self.filename.startswith("onnx/"):
            return self
        stem = self.filename.removesuffix(".onnx")
        return replace(self, filename=f"{stem}{DTYPE_SUFFIXES[dtype]}.onnx")


def new_graph(name: str = "main_graph") -> ir.Graph:
    return ir.Graph([], [], nodes=[], opset_imports={"": OPSET}, name=name)


def as_model(graph: ir.Graph) -> ir.Model:
    return ir.Model(graph, ir_version=10, producer_name="mobius")


def drop_unused_initializers(graph: ir.Graph) -> None:
    """Remove the initializers no node reads (a module's parameter its forward skipped)."""
    for name in [n for n, v in graph.initializers.items() if not v.uses()]:
        graph.initializers.pop(name)


def set_output(builder, value: ir.Value, name: str, dims: list, dtype: ir.DataType) -> None:
    """Name `value` a graph output with its symbolic shape and type."""
    builder.add_output(value, name)
    value.shape = ir.Shape(dims)
    value.type = ir.TensorType(dtype)


def set_float32_output(builder, value: ir.Value, name: str, dims: list, dtype: ir.DataType):
    """An encoder's output, float32 whatever the graph's `dtype` (cast at the edge, as the fp16
    exports Transformers.js ships are: under Node its pipelines read a float16 output's raw
    16-bit words)."""
    if dtype != ir.DataType.FLOAT:
        value = builder.op.Cast(value, to=ir.DataType.FLOAT)
    set_output(builder, value, name, dims, ir.DataType.FLOAT)

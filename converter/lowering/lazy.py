"""Lazily computed initializers: a quantized weight is computed from the memory-mapped
checkpoint only when the package writer asks for one of its parts, and dropped once every
part was written, so peak memory stays near one tensor."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import onnx_ir as ir


class LazyResult:
    """Computes one result on first use (`compute()`) and serves its parts from it; the
    result is dropped once every registered part was served. A lock keeps this right when
    the writer runs on several threads."""

    def __init__(self, compute: Callable[[], Any]):
        self._compute = compute
        self._result = None
        self._parts = 0  # registered parts; the result is dropped once each was served
        self._served = 0
        self._lock = threading.Lock()

    def part(self, pick: Callable[[Any], ir.Tensor]) -> Callable[[], ir.Tensor]:
        """A function giving `pick(result)`, for a LazyTensor."""
        self._parts += 1

        def compute() -> ir.Tensor:
            with self._lock:
                if self._result is None:
                    self._result = self._compute()
                tensor = pick(self._result)
                self._served += 1
                if self._served == self._parts:  # every part written: drop the result
                    self._result, self._served = None, 0
                return tensor

        return compute


def lazy_initializer(graph: ir.Graph, name: str, compute, dtype, dims) -> ir.Value:
    """Register an initializer whose tensor `compute()` gives when the package is written."""
    shape = ir.Shape(dims)
    value = ir.Value(
        name=name,
        shape=shape,
        type=ir.TensorType(dtype),
        const_value=ir.LazyTensor(compute, dtype=dtype, shape=shape, name=name),
    )
    graph.register_initializer(value)
    return value


def swap(graph: ir.Graph, old: ir.Node, new: ir.Node) -> None:
    """Replace `old` by `new`, keeping the output's name (it may be a graph output)."""
    graph.insert_before(old, new)
    name, output = old.outputs[0].name, new.outputs[0]
    output.type, output.shape = old.outputs[0].type, old.outputs[0].shape  # a graph output's
    old.outputs[0].replace_all_uses_with(output, replace_graph_outputs=True)
    graph.remove(old, safe=True)
    output.name = name

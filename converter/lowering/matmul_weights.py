"""Which MatMuls multiply by a weight initializer: what the weight-quantizing passes
(int4, int8) rewrite, on any component's graph."""

from __future__ import annotations

import onnx_ir as ir

from converter.lowering.passes import is_initializer, only_use


def weight_of(matmul: ir.Node):
    """(weight initializer, its Transpose node or None, True if stored [N, K]) or None. A weight
    several MatMuls read (a layer run more than once) is quantized once for all of them."""
    b = matmul.inputs[1]
    producer = b.producer()
    if producer is not None and producer.op_type == "Transpose" and only_use(b):
        weight = producer.inputs[0]
        if is_initializer(weight) and weight.shape.rank() == 2 and only_multiplied(weight):
            return weight, producer, True
        return None
    if is_initializer(b) and b.shape.rank() == 2 and only_multiplied(b):
        return b, None, False
    return None


def only_multiplied(weight: ir.Value) -> bool:
    """Every use of `weight` is as a MatMul's right side, directly or through a Transpose."""
    for node, index in weight.uses():
        if node.op_type == "Transpose" and only_use(node.outputs[0]):
            node, index = next(iter(node.outputs[0].uses()))
        if node.op_type != "MatMul" or index != 1:
            return False
    return True


def layout_name(cache: dict, name: str, layout_nk: bool) -> str:
    """The initializer name of weight `name` quantized as read in `layout_nk`, for a `cache`
    keyed by (weight name, layout). A weight that MatMuls read both ways (stored [N, K] behind
    a Transpose, and [K, N]) is quantized once per layout, the second under
    `<name>.transposed`: one layout's quantization read as the other multiplies by the wrong
    matrix."""
    return f"{name}.transposed" if (name, not layout_nk) in cache else name

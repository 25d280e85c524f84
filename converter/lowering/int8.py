"""int8 pass: dynamic quantization of the MatMuls by weights, on any component's graph.

Each `MatMul(x, W)` becomes standard ONNX ops, as onnxruntime's dynamic quantizer writes them:

    x_q, x_scale, x_zero = DynamicQuantizeLinear(x)        # uint8, per tensor, at run time
    y = Cast(MatMulInteger(x_q, W_q, x_zero), float) * (x_scale * W_scale)

with `W_q` int8 [K, N] and `W_scale` float32 [N] per output channel (converter/quantize_int8.py),
quantized lazily while the package is written. MatMuls reading the same `x` share its
DynamicQuantizeLinear. onnxruntime's CPU EP fuses each chain into
`com.microsoft.DynamicQuantizeMatMul` (or `MatMulIntegerToFloat` beside a shared quantizer) when
the session is created; measured on 1.32, the fused and unfused forms give bit-identical outputs
at the same speed, so one portable graph serves every EP that has the kernels
(docs/execution-providers.md).
"""

from __future__ import annotations

import onnx_ir as ir

from converter.lowering.lazy import LazyResult, lazy_initializer, swap
from converter.lowering.matmul_weights import layout_name, weight_of
from converter.quantize_int8 import quantize_q8
from converter.weights import source_array


def quantize_matmuls_int8(
    model: ir.Model, heads: set[str], float_only: set[str] = frozenset()
) -> int:
    """MatMul by a weight initializer -> the dynamic int8 chain above, except the LM head's
    weights (`heads`) and those in `float_only` (MoE routers). Returns how many MatMuls."""
    graph, count = model.graph, 0
    weights: dict[tuple[str, bool], list[ir.Value]] = {}  # read by several MatMuls: one copy
    activations: dict[ir.Value, ir.Node] = {}  # x -> its DynamicQuantizeLinear
    for node in list(graph):
        found = weight_of(node) if node.op_type == "MatMul" and node.domain == "" else None
        if found is None:
            continue
        weight, transpose, layout_nk = found
        if weight.name in float_only or weight.name in heads:
            continue
        key = (weight.name, layout_nk)
        if key not in weights:
            weights[key] = _initializers(graph, weight, layout_nk, layout_name(weights, *key))
        x = node.inputs[0]
        if x not in activations:
            activations[x] = ir.node(
                "DynamicQuantizeLinear", [x], num_outputs=3, name=f"{node.name}/quantize"
            )
            graph.insert_before(node, activations[x])
        _to_matmul_integer(graph, node, activations[x], *weights[key])
        if transpose is not None:
            graph.remove(transpose, safe=True)
        if not weight.uses():
            graph.initializers.pop(weight.name)
        count += 1
    return count


def _initializers(graph: ir.Graph, weight: ir.Value, layout_nk: bool, name: str) -> list[ir.Value]:
    """int8 values [K, N] and float32 scales [N] named after `name`, computed together when
    first written."""
    tensor = weight.const_value
    n, k = weight.shape.dims if layout_nk else weight.shape.dims[::-1]

    def quantize():
        array = source_array(tensor)
        return quantize_q8(array if layout_nk else array.T)

    result = LazyResult(quantize)
    return [
        lazy_initializer(
            graph,
            f"{name}.int8",
            result.part(lambda q: ir.Tensor(q.values)),
            ir.DataType.INT8,
            [k, n],
        ),
        lazy_initializer(
            graph,
            f"{name}.scales",
            result.part(lambda q: ir.Tensor(q.scales)),
            ir.DataType.FLOAT,
            [n],
        ),
    ]


def _to_matmul_integer(graph, matmul, quantizer, values, scales) -> None:
    x_q, x_scale, x_zero = quantizer.outputs
    name = matmul.name
    product = ir.node("MatMulInteger", [x_q, values, x_zero], name=f"{name}/int8")
    scale = ir.node("Mul", [x_scale, scales], name=f"{name}/scale")
    widened = ir.node(
        "Cast", [product.outputs[0]], attributes={"to": ir.DataType.FLOAT}, name=f"{name}/cast"
    )
    graph.insert_before(matmul, [product, scale, widened])
    swap(graph, matmul, ir.node("Mul", [widened.outputs[0], scale.outputs[0]], name=f"{name}/y"))

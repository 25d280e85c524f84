"""int4 experts: com.microsoft.MoE -> QMoE over block-wise 4-bit expert stacks, and the dense
form's stacks as blocked DequantizeLinear (standard ops).

An expert stack [E, N, K] quantizes as one [E * N, K] weight: blocks run along K within a
row, so the MatMulNBits encoding of converter/quantize.py reshaped to [E, N, K / 2] (two codes
a byte, the even K index in the low nibble) with scales [E, N, K / block] is QMoE's raw layout
(weights_prepacked=0); symmetric weights omit the zero points (the kernel's default is 8).
Each stack is quantized lazily while the package is written.

Measured on onnxruntime 1.32's CPU QMoE: without `router_weights` it renormalizes the top-k
weights whatever normalize_routing_weights says. So QMoE gets the MoE node's routing as
`router_weights = Softmax(router_probs)` (what MoE weighs with), selecting by the same
`router_probs`, and honours the flag as MoE does.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.execution_providers import ExecutionProvider
from converter.lowering.int4 import Int4, _LazyQ4
from converter.lowering.lazy import lazy_initializer, swap
from converter.lowering.passes import MS_DOMAIN, is_initializer
from converter.quantize import cast_scales, to_dequantize_linear
from converter.weights import SourceTensor, source_array

# the MoE op's inputs: fc1 weights, fc1 bias, fc2 weights, fc2 bias
_FC1, _FC1_BIAS, _FC2, _FC2_BIAS = 2, 3, 4, 5


def quantize_experts(model: ir.Model, ep: ExecutionProvider, int4: Int4, act: ir.DataType) -> int:
    """Every MoE node whose expert stacks the block size divides -> QMoE. Returns how many."""
    graph, count = model.graph, 0
    for node in list(graph):
        if node.op_type != "MoE" or node.domain != MS_DOMAIN:
            continue
        fc1, fc2 = node.inputs[_FC1], node.inputs[_FC2]
        if not (is_initializer(fc1) and is_initializer(fc2)):
            continue
        if any(dims[2] % int4.block_size for dims in (fc1.shape.dims, fc2.shape.dims)):
            continue  # QMoE needs whole blocks in both widths: the float MoE stays
        fc1_parts = _quantized(graph, fc1, int4, act)
        fc2_parts = _quantized(graph, fc2, int4, act)
        inputs = [
            *node.inputs[:2],
            *fc1_parts[:2],
            node.inputs[_FC1_BIAS],
            *fc2_parts[:2],
            node.inputs[_FC2_BIAS],
        ]
        zero_points = [None, None] if int4.symmetric else fc1_parts[2:] + fc2_parts[2:]
        router_weights = _softmax(graph, node, node.inputs[1])
        inputs += [None, None, None, *zero_points, None, router_weights]
        attributes = {a.name: a for a in node.attributes.values()}
        for name, value in (
            ("expert_weight_bits", 4),
            ("block_size", int4.block_size),
            ("weights_prepacked", 0),
            ("accuracy_level", ep.int4_accuracy_level),
        ):
            attributes[name] = ir.AttrInt64(name, value)
        qmoe = ir.node(
            "QMoE",
            inputs,
            attributes=attributes,
            domain=MS_DOMAIN,
            name=f"{node.name}/q4",
        )
        swap(graph, node, qmoe)
        for stack in (fc1, fc2):
            if not stack.uses():
                graph.initializers.pop(stack.name)
        count += 1
    return count


def _softmax(graph: ir.Graph, before: ir.Node, logits: ir.Value) -> ir.Value:
    softmax = ir.node("Softmax", [logits], attributes={"axis": -1}, name=f"{before.name}/weights")
    graph.insert_before(before, softmax)
    return softmax.outputs[0]


def _quantized(graph: ir.Graph, stack: ir.Value, int4: Int4, act: ir.DataType) -> list[ir.Value]:
    """Packed values, scales (and zero points) of one [E, N, K] stack, as lazy initializers."""
    experts, n, k = stack.shape.dims
    tensor = stack.const_value
    rows = SourceTensor(
        lambda: source_array(tensor).reshape(experts * n, k), tensor.dtype, (experts * n, k), ""
    )
    q = _LazyQ4(rows, True, int4)
    blocks, act_np = k // int4.block_size, act.numpy()
    parts = [
        (
            "q4",
            lambda r: ir.Tensor(r.packed.reshape(experts, n, k // 2)),
            ir.DataType.UINT8,
            [experts, n, k // 2],
        ),
        (
            "scales",
            lambda r: ir.Tensor(
                cast_scales(r.scales, act_np, f"{stack.name}.scales", signed=True).reshape(
                    experts, n, blocks
                )
            ),
            act,
            [experts, n, blocks],
        ),
        (
            "zero_points",
            lambda r: ir.Tensor(r.zero_points.reshape(experts, n, -1)),
            ir.DataType.UINT8,
            [experts, n, -(-blocks // 2)],
        ),
    ]
    return _lazy_parts(graph, stack.name, q, parts)


def _lazy_parts(graph: ir.Graph, base: str, q: _LazyQ4, parts: list) -> list[ir.Value]:
    """One lazy initializer `{base}.{suffix}` per (suffix, pick, dtype, dims) of `q`'s
    result; symmetric weights have no zero points (the last part)."""
    if q.int4.symmetric:
        parts = parts[:-1]
    return [
        lazy_initializer(graph, f"{base}.{suffix}", q.part(pick), dtype, dims)
        for suffix, pick, dtype, dims in parts
    ]


def quantize_dense_experts(model: ir.Model, stacks: set[str], int4: Int4, act: ir.DataType) -> int:
    """The dense form's expert `stacks` [E, K, N] (MatMul's right side) -> int4 values read
    through a DequantizeLinear blocked along K (axis 1). Returns how many were quantized."""
    graph, count = model.graph, 0
    for node in list(graph):
        if node.op_type != "MatMul" or node.domain != "":
            continue
        stack = node.inputs[1]
        if stack is None or stack.name not in stacks or not is_initializer(stack):
            continue
        values = _dequantize_linear_inputs(graph, stack, int4, act)
        dq = ir.node(
            "DequantizeLinear",
            values,
            attributes={"axis": 1, "block_size": int4.block_size},
            name=f"{node.name}/dq",
        )
        graph.insert_before(node, dq)
        node.replace_input_with(1, dq.outputs[0])
        if not stack.uses():
            graph.initializers.pop(stack.name)
        count += 1
    return count


def _dequantize_linear_inputs(graph, stack: ir.Value, int4: Int4, act: ir.DataType):
    """Values [E, K, N], scales [E, blocks, N] (and zero points) of one stack: its [E * N, K]
    rows quantized along K, in the DequantizeLinear form, put back in the stack's order."""
    experts, k, n = stack.shape.dims
    tensor = stack.const_value

    def rows() -> np.ndarray:
        return source_array(tensor).transpose(0, 2, 1).reshape(experts * n, k)

    q = _LazyQ4(
        SourceTensor(rows, tensor.dtype, (experts * n, k), ""), True, int4, to_dequantize_linear
    )
    blocks = q.blocks

    def restacked(array: np.ndarray) -> np.ndarray:  # [rows, E * N] -> [E, rows, N]
        return np.ascontiguousarray(array.reshape(-1, experts, n).transpose(1, 0, 2))

    values_type = ir.DataType.INT4 if int4.symmetric else ir.DataType.UINT4
    act_np = act.numpy()
    parts = [
        (
            "q4",
            lambda r: ir.Tensor(restacked(r[0]), dtype=values_type),
            values_type,
            [experts, k, n],
        ),
        (
            "scales",
            lambda r: ir.Tensor(restacked(r[1].astype(act_np)), dtype=act),
            act,
            [experts, blocks, n],
        ),
        (
            "zero_points",
            lambda r: ir.Tensor(restacked(r[2]), dtype=ir.DataType.UINT4),
            ir.DataType.UINT4,
            [experts, blocks, n],
        ),
    ]
    return _lazy_parts(graph, stack.name, q, parts)

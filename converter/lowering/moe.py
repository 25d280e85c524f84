"""int4 experts: com.microsoft.MoE -> QMoE over block-wise 4-bit expert stacks.

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

import onnx_ir as ir

from converter.execution_providers import ExecutionProvider
from converter.lowering.int4 import Int4, _lazy_initializer, _LazyQ4, _swap
from converter.lowering.passes import MS_DOMAIN, is_initializer
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
        _swap(graph, node, qmoe)
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
        _lazy_initializer(
            graph,
            f"{stack.name}.q4",
            q.part(lambda r: ir.Tensor(r.packed.reshape(experts, n, k // 2))),
            ir.DataType.UINT8,
            [experts, n, k // 2],
        ),
        _lazy_initializer(
            graph,
            f"{stack.name}.scales",
            q.part(lambda r: ir.Tensor(r.scales.astype(act_np).reshape(experts, n, blocks))),
            act,
            [experts, n, blocks],
        ),
    ]
    if not int4.symmetric:
        parts.append(
            _lazy_initializer(
                graph,
                f"{stack.name}.zero_points",
                q.part(lambda r: ir.Tensor(r.zero_points.reshape(experts, n, -1))),
                ir.DataType.UINT8,
                [experts, n, -(-blocks // 2)],
            )
        )
    return parts

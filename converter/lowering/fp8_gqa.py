"""On an EP whose GroupQueryAttention keeps a float8 cache itself (CUDA), the fp8-kv-cache
graph's DequantizeLinear before each GQA's past and QuantizeLinear after its present fold into
the op: it reads and writes the float8 cache with k_scale / v_scale (PER_CHANNEL, float32
[1, kv_heads, 1, head_size]: each head's scale repeated over its channels)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.lowering.passes import MS_DOMAIN, shared_constant, take_place
from converter.weights import source_array

PAST, PRESENT = (3, 4), (1, 2)  # GroupQueryAttention's past_key/value inputs, present outputs
SCALES = 12  # k_scale, v_scale: inputs 12 and 13


def has_float8_cache(model: ir.Model) -> bool:
    return any(v.dtype == ir.DataType.FLOAT8E4M3FN for v in model.graph.inputs)


def fold_fp8_cache_into_gqa(model: ir.Model) -> int:
    """Returns how many GroupQueryAttention nodes now read a float8 cache."""
    graph, count = model.graph, 0
    for node in list(graph):
        if node.op_type != "GroupQueryAttention" or node.domain != MS_DOMAIN:
            continue
        dequantize = [_producer(node.inputs[i], "DequantizeLinear") for i in PAST]
        quantize = [_only_reader(node.outputs[i], "QuantizeLinear") for i in PRESENT]
        if None in dequantize or None in quantize:
            continue
        scales = [_per_channel(graph, d) for d in dequantize]
        inputs = [*node.inputs, *[None] * (SCALES - len(node.inputs))][:SCALES]
        inputs[PAST[0]], inputs[PAST[1]] = (d.inputs[0] for d in dequantize)
        attributes = {
            **dict(node.attributes),
            "k_quant_type": "PER_CHANNEL",
            "v_quant_type": "PER_CHANNEL",
            "kv_cache_bit_width": 8,
        }
        fused = ir.node(
            "GroupQueryAttention",
            [*inputs, *scales],
            attributes=attributes,
            domain=MS_DOMAIN,
            num_outputs=3,
            name=f"{node.name}/fp8_cache",
        )
        graph.insert_before(node, fused)
        take_place(node.outputs[0], fused.outputs[0])
        for q, i in zip(quantize, PRESENT, strict=True):
            take_place(q.outputs[0], fused.outputs[i])
        per_head = [d.inputs[1] for d in dequantize]
        graph.remove([*quantize, node, *dequantize], safe=True)
        for scale in per_head:  # now read by nothing: the fused node takes its per-channel copy
            if not scale.uses():
                graph.initializers.pop(scale.name)
        count += 1
    return count


def _producer(value: ir.Value | None, op_type: str) -> ir.Node | None:
    node = value.producer() if value is not None else None
    return node if node is not None and node.op_type == op_type else None


def _only_reader(value: ir.Value, op_type: str) -> ir.Node | None:
    readers = {use.node for use in value.uses()}
    if len(readers) != 1 or value.is_graph_output():
        return None
    (node,) = readers
    return node if node.op_type == op_type else None


def _per_channel(graph: ir.Graph, dequantize: ir.Node) -> ir.Value:
    """The per-head scale of `dequantize`, as GQA's float32 [1, kv_heads, 1, head_size]."""
    cache, scale = dequantize.inputs[0], dequantize.inputs[1]
    head_size = cache.shape[3]

    def per_channel() -> np.ndarray:
        heads = source_array(scale.const_value).astype(np.float32)
        return np.repeat(heads, head_size).reshape(1, len(heads), 1, head_size)

    return shared_constant(graph, f"{scale.name}.per_channel", per_channel)

"""com.microsoft.MoE over experts the checkpoint holds packed (converter/olive_weights.py) ->
QMoE over those bytes, never requantized. FC1 and FC2 keep their own widths (2, 3, 4 or 8 bits:
`expert_weight_bits` is FC1's, `fc2_expert_weight_bits` FC2's where it differs) and share one
block size. Symmetric projections bind no zero points (QMoE's default is the offset
2^(bits - 1), Olive's too); asymmetric ones bind their packed uint8 zero points.

A pair with an INT3 projection uses the raw INT3 profile proposed in microsoft/onnxruntime#32657
(row-local LSB-first codes offset by 4). That contract is a draft: such a node carries a
`mobius.qmoe_draft` metadata entry, and so does the model (a key `--release` keeps), saying so.
Whether a pair runs depends on the onnxruntime version and EP (onnxruntime 1.32's CPU kernel runs
equal widths only).
"""

from __future__ import annotations

import onnx_ir as ir

from converter.config.olive import Projection
from converter.execution_providers import ExecutionProvider
from converter.lowering.lazy import LazyResult, lazy_initializer, swap
from converter.lowering.moe import _FC1, _FC1_BIAS, _FC2, _FC2_BIAS, _softmax
from converter.lowering.passes import MS_DOMAIN
from converter.olive_weights import INT3
from converter.packed_bits import packed_width

DRAFT = "mobius.qmoe_draft"
DRAFT_NOTE = (
    "raw INT3 QMoE weights as proposed in microsoft/onnxruntime#32657 (a draft contract, "
    "not an approved schema version); execution depends on the onnxruntime version and EP"
)


def bind_packed_experts(model: ir.Model, ep: ExecutionProvider, act: ir.DataType) -> int:
    """Every MoE node whose two expert stacks are packed -> QMoE. Returns how many."""
    graph, count, drafts = model.graph, 0, 0
    for node in list(graph):
        if node.op_type != "MoE" or node.domain != MS_DOMAIN:
            continue
        fc1, fc2 = node.inputs[_FC1], node.inputs[_FC2]
        packs = [getattr(v.const_value, "packed", None) for v in (fc1, fc2)]
        if None in packs:
            continue
        (w1, s1, *z1), (w2, s2, *z2) = (
            _inputs(graph, stack, pack, act) for stack, pack in zip((fc1, fc2), packs, strict=True)
        )
        first, second = packs[0].info, packs[1].info
        inputs = [*node.inputs[:2], w1, s1, node.inputs[_FC1_BIAS], w2, s2]
        inputs += [node.inputs[_FC2_BIAS], None, None, None]
        inputs += [z1[0] if z1 else None, z2[0] if z2 else None, None]
        inputs.append(_softmax(graph, node, node.inputs[1]))  # router_weights, as in MoE
        qmoe = ir.node(
            "QMoE",
            inputs,
            attributes=_attributes(node, first, second, ep),
            domain=MS_DOMAIN,
            name=f"{node.name}/packed",
        )
        if INT3 in (first.bits, second.bits):
            qmoe.metadata_props[DRAFT] = DRAFT_NOTE
            drafts += 1
        swap(graph, node, qmoe)
        for stack in (fc1, fc2):
            graph.initializers.pop(stack.name)
        count += 1
    if drafts:
        model.metadata_props[DRAFT] = f"{drafts} QMoE node(s): {DRAFT_NOTE}"
    return count


def _attributes(moe: ir.Node, first: Projection, second: Projection, ep) -> dict:
    attributes = {a.name: a for a in moe.attributes.values()}
    values = {
        "expert_weight_bits": first.bits,
        "block_size": first.block_size,
        "weights_prepacked": 0,
        "accuracy_level": ep.int4_accuracy_level,
    }
    if second.bits != first.bits:
        values["fc2_expert_weight_bits"] = second.bits
    for name, value in values.items():
        attributes[name] = ir.AttrInt64(name, value)
    return attributes


def _inputs(graph: ir.Graph, stack: ir.Value, packed, act: ir.DataType) -> list[ir.Value]:
    """Lazy initializers of one stack's packed values, scales (cast to the activation dtype)
    and, where bound, zero points: `{stack}.packed`, `.scales`, `.zero_points`."""
    result = LazyResult(packed.load)
    spec: Projection = packed.info
    experts, rows, k = stack.shape.dims
    blocks = k // spec.block_size
    act_np = act.numpy()
    parts = [
        ("packed", lambda p: ir.Tensor(p.weights), ir.DataType.UINT8, packed_width(k, spec.bits)),
        ("scales", lambda p: ir.Tensor(p.scales.astype(act_np), dtype=act), act, blocks),
    ]
    if not spec.symmetric:
        width = packed_width(blocks, spec.bits)
        parts.append(("zero_points", lambda p: ir.Tensor(p.zero_points), ir.DataType.UINT8, width))
    return [
        lazy_initializer(
            graph, f"{stack.name}.{suffix}", result.part(pick), dtype, [experts, rows, last]
        )
        for suffix, pick, dtype, last in parts
    ]

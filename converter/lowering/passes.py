"""Graph passes after weights are bound: fold packed weights, pre-transpose, fuse skip norms.

All weight transforms stay lazy: a folded or transposed initializer is computed from the
memory-mapped checkpoint only when the package is written.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx_ir as ir

from converter.quantize import BlockWeight
from converter.rows import ConcatRows, Rows
from converter.weights import Packed, SourceTensor, source_array, source_rows

MS_DOMAIN = "com.microsoft"


def is_initializer(value: ir.Value | None) -> bool:
    return value is not None and value.is_initializer() and value.const_value is not None


def only_use(value: ir.Value) -> bool:
    return len(value.uses()) == 1


def fold_packed_weights(model: ir.Model) -> int:
    """Concat of initializers (packed q/k/v, gate/up) -> one lazy initializer. Identical
    Concats (a layer run more than once) share it. Returns how many were folded."""
    graph, count = model.graph, 0
    for node in list(graph):
        if node.op_type != "Concat" or node.domain != "" or node.graph is None:
            continue
        parts = list(node.inputs)
        if not all(is_initializer(p) for p in parts):
            continue
        concats = {use.node for p in parts for use in p.uses()}
        if not all(_concat_key(c) == _concat_key(node) for c in concats):
            continue
        axis = node.attributes.get_int("axis", 0)
        tensors = [p.const_value for p in parts]
        name = _packed_name([p.name for p in parts])
        packed = _packed_rows(tensors) if axis == 0 else None
        rows = [source_rows(t) for t in tensors]
        if all(isinstance(r, Rows) for r in rows):
            dtype = tensors[0].dtype
            folded = SourceTensor.of_rows(ConcatRows(rows, axis), dtype, name, packed=packed)
        else:

            def concat(tensors=tensors, axis=axis) -> np.ndarray:
                return np.concatenate([source_array(t) for t in tensors], axis=axis)

            dims = list(parts[0].shape.dims)
            dims[axis] = sum(p.shape.dims[axis] for p in parts)
            folded = SourceTensor(concat, tensors[0].dtype, dims, name, packed)
        value = _replace_with_initializer(graph, node, folded)
        for other in concats - {node}:
            other.outputs[0].replace_all_uses_with(value)
            graph.remove(other, safe=True)
        for part in parts:
            graph.initializers.pop(part.name, None)
        count += 1
    return count


def _packed_rows(tensors) -> Packed | None:
    """The packed form of [N, K] weights stacked along N, where each is a packed INT4 weight
    of the same setting (BlockWeight rows: values, scales and zero points stack alike)."""
    packs = [getattr(t, "packed", None) for t in tensors]
    if any(p is None or p.info != packs[0].info for p in packs):
        return None

    def load() -> BlockWeight:
        weights = [p.load() for p in packs]
        zero_points = [w.zero_points for w in weights]
        return BlockWeight(
            np.concatenate([w.packed for w in weights]),
            np.concatenate([w.scales for w in weights]),
            None if zero_points[0] is None else np.concatenate(zero_points),
            weights[0].k,
            weights[0].block_size,
        )

    return Packed(packs[0].info, load)


def _concat_key(node: ir.Node) -> tuple | None:
    if node.op_type != "Concat" or node.domain != "":
        return None
    return tuple(v.name for v in node.inputs), node.attributes.get_int("axis", 0)


def _packed_name(names: list[str]) -> str:
    """'a.q_proj.weight', 'a.k_proj.weight' -> 'a.q_proj+k_proj.weight'."""
    stems = [n.rsplit(".", 2) for n in names]
    prefix, suffix = stems[0][0], stems[0][2]
    return f"{prefix}.{'+'.join(s[1] for s in stems)}.{suffix}"


def shared_constant(graph: ir.Graph, name: str, array_of) -> ir.Value:
    """The initializer `name`, holding `array_of()` from the first time it is asked for (the
    nodes that ask for it by name share it)."""
    if name not in graph.initializers:
        graph.register_initializer(
            ir.Value(name=name, const_value=ir.tensor(array_of(), name=name))
        )
    return graph.initializers[name]


def _replace_with_initializer(graph, node, tensor: SourceTensor) -> ir.Value:
    """Replace `node`'s output by an initializer holding `tensor` (computed when written)."""
    value = ir.Value(
        name=tensor.name, shape=tensor.shape, type=ir.TensorType(tensor.dtype), const_value=tensor
    )
    graph.register_initializer(value)
    node.outputs[0].replace_all_uses_with(value)
    graph.remove(node, safe=True)
    return value


def pretranspose(model: ir.Model) -> int:
    """Transpose([out, in] initializer) -> a lazily transposed [in, out] initializer; a weight
    transposed by several nodes (a layer run more than once) gets one copy for all of them."""
    graph, count = model.graph, 0
    for node in list(graph):
        if node.op_type != "Transpose" or node.domain != "" or node.graph is None:
            continue
        weight = node.inputs[0]
        if not is_initializer(weight) or weight.shape.rank() != 2:
            continue
        transposes = [use.node for use in weight.uses()]
        if not all(_swaps_rows_and_columns(t) for t in transposes):
            continue
        tensor = weight.const_value
        rows = source_rows(tensor)
        if isinstance(rows, Rows):
            flipped = SourceTensor.of_rows(rows, tensor.dtype, weight.name, transposed=True)
        else:

            def transposed(tensor=tensor) -> np.ndarray:
                return np.ascontiguousarray(source_array(tensor).T)

            dims = weight.shape.dims[::-1]
            flipped = SourceTensor(transposed, tensor.dtype, dims, weight.name)
        graph.initializers.pop(weight.name)
        value = _replace_with_initializer(graph, transposes[0], flipped)
        for other in transposes[1:]:
            other.outputs[0].replace_all_uses_with(value)
            graph.remove(other, safe=True)
        count += 1
    return count


def _swaps_rows_and_columns(node: ir.Node) -> bool:
    return (
        node.op_type == "Transpose"
        and node.domain == ""
        and list(node.attributes.get_ints("perm", [])) == [1, 0]
    )


_SKIP_OF = {
    "RMSNormalization": "SkipSimplifiedLayerNormalization",
    "LayerNormalization": "SkipLayerNormalization",
}


def fuse_skip_norms(model: ir.Model) -> int:
    """Add(residual, h) -> norm  becomes one com.microsoft Skip*LayerNormalization.

    The fused node's fourth output is the sum, which replaces the Add for the residual path.
    """
    graph, count = model.graph, 0
    for norm in list(graph):
        fused_type = _SKIP_OF.get(norm.op_type)
        if fused_type is None or norm.domain != "":
            continue
        add = norm.inputs[0].producer() if norm.inputs[0] is not None else None
        if add is None or add.op_type != "Add" or add.domain != "":
            continue
        a, b = add.inputs
        if is_initializer(a) or is_initializer(b) or not _same_rank3(a, b):
            continue
        inputs = [a, b, *norm.inputs[1:]]  # gamma (and beta for LayerNorm)
        fused = ir.node(
            fused_type,
            inputs,
            attributes={"epsilon": norm.attributes.get_float("epsilon", 1e-5)},
            domain=MS_DOMAIN,
            num_outputs=4,
            name=f"{norm.name}/skip",
        )
        for unused in fused.outputs[1:3]:  # mean and inverse std, which onnxruntime then skips
            unused.name = ""
        graph.insert_before(norm, fused)
        take_place(norm.outputs[0], fused.outputs[0])
        add.outputs[0].replace_all_uses_with(fused.outputs[3])
        graph.remove(norm, safe=True)
        graph.remove(add, safe=True)
        count += 1
    if count:
        model.opset_imports.setdefault(MS_DOMAIN, 1)
        graph.sort()  # the sum's other readers may come before the norm the fused node replaced
    return count


def take_place(old: ir.Value, new: ir.Value) -> None:
    """`new` replaces `old` everywhere; as a graph output (an encoder's last norm) it keeps
    `old`'s name, shape and type."""
    if old.is_graph_output():
        new.name, new.shape, new.type = old.name, old.shape, old.type
    old.replace_all_uses_with(new, replace_graph_outputs=True)


def _same_rank3(a: ir.Value, b: ir.Value) -> bool:
    """Neither side is known to broadcast (skip norms add same-shaped activations)."""
    ranks = {len(v.shape) for v in (a, b) if v.shape is not None}
    return ranks <= {3}


def count_ops(model: ir.Model) -> Counter:
    return Counter(
        node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        for node in model.graph
    )

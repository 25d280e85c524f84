"""Lowering passes run after weights are bound, and the count of what they fused.

All weight transforms stay lazy: a folded, transposed or quantized initializer is
computed from the memory-mapped checkpoint only when the package is written.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx_ir as ir

from converter.components.linear import Conv1D, Linear, PackedLinear
from converter.errors import MobiusError
from converter.execution_providers import (
    GATHER_Q4,
    GQA,
    MATMUL_NBITS,
    SKIP_NORM,
    ExecutionProvider,
)
from converter.quantize import DEQUANTIZE_LINEAR_AXIS, quantize_q4, to_dequantize_linear
from converter.weights import SourceTensor, source_array

MS_DOMAIN = "com.microsoft"
LM_HEAD = "lm_head.weight"


class LoweringError(MobiusError):
    """A pass did not produce the fusions the EP's graph must have."""


def _initializer(value: ir.Value | None) -> bool:
    return value is not None and value.is_initializer() and value.const_value is not None


def _only_use(value: ir.Value) -> bool:
    return len(value.uses()) == 1


def fold_packed_weights(model: ir.Model) -> int:
    """Concat of initializers (packed q/k/v, gate/up) -> one lazy initializer. Returns count."""
    graph, count = model.graph, 0
    for node in list(graph):
        if node.op_type != "Concat" or node.domain != "":
            continue
        parts = list(node.inputs)
        if not all(_initializer(p) and _only_use(p) for p in parts):
            continue
        axis = node.attributes.get_int("axis", 0)
        tensors = [p.const_value for p in parts]

        def concat(tensors=tensors, axis=axis) -> np.ndarray:
            return np.concatenate([source_array(t) for t in tensors], axis=axis)

        dims = list(parts[0].shape.dims)
        dims[axis] = sum(p.shape.dims[axis] for p in parts)
        name = _packed_name([p.name for p in parts])
        _replace_with_initializer(graph, node, name, concat, tensors[0].dtype, dims)
        for part in parts:
            graph.initializers.pop(part.name, None)
        count += 1
    return count


def _packed_name(names: list[str]) -> str:
    """'a.q_proj.weight', 'a.k_proj.weight' -> 'a.q_proj+k_proj.weight'."""
    stems = [n.rsplit(".", 2) for n in names]
    prefix, suffix = stems[0][0], stems[0][2]
    return f"{prefix}.{'+'.join(s[1] for s in stems)}.{suffix}"


def _replace_with_initializer(graph, node, name, source, dtype, dims) -> ir.Value:
    """Replace `node`'s output by an initializer computed by `source()` when written."""
    value = ir.Value(
        name=name,
        shape=ir.Shape(dims),
        type=ir.TensorType(dtype),
        const_value=SourceTensor(source, dtype, dims, name),
    )
    graph.register_initializer(value)
    node.outputs[0].replace_all_uses_with(value)
    graph.remove(node, safe=True)
    return value


def pretranspose(model: ir.Model) -> int:
    """Transpose([out, in] initializer) -> a lazily transposed [in, out] initializer."""
    graph, count = model.graph, 0
    for node in list(graph):
        if node.op_type != "Transpose" or node.domain != "":
            continue
        weight = node.inputs[0]
        if not (_initializer(weight) and _only_use(weight)):
            continue
        if list(node.attributes.get_ints("perm", [])) != [1, 0]:
            continue
        tensor = weight.const_value

        def transposed(tensor=tensor) -> np.ndarray:
            return np.ascontiguousarray(source_array(tensor).T)

        out_dim, in_dim = weight.shape.dims
        graph.initializers.pop(weight.name)
        _replace_with_initializer(
            graph, node, weight.name, transposed, tensor.dtype, [in_dim, out_dim]
        )
        count += 1
    return count


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
        if _initializer(a) or _initializer(b) or not _same_rank3(a, b):
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
        graph.insert_before(norm, fused)
        norm.outputs[0].replace_all_uses_with(fused.outputs[0])
        add.outputs[0].replace_all_uses_with(fused.outputs[3])
        graph.remove(norm, safe=True)
        graph.remove(add, safe=True)
        count += 1
    if count:
        model.opset_imports.setdefault(MS_DOMAIN, 1)
    return count


def _same_rank3(a: ir.Value, b: ir.Value) -> bool:
    """Neither side is known to broadcast (skip norms add same-shaped activations)."""
    ranks = {len(v.shape) for v in (a, b) if v.shape is not None}
    return ranks <= {3}


def count_ops(model: ir.Model) -> Counter:
    return Counter(
        node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        for node in model.graph
    )


@dataclass(frozen=True)
class Int4:
    """int4 weight quantization settings (block-wise round-to-nearest)."""

    block_size: int = 32
    symmetric: bool = True
    lm_head: bool = False  # also quantize the lm_head (a tied one gets an int4 copy)

    def __post_init__(self) -> None:
        if self.block_size not in (16, 32, 64, 128):
            raise MobiusError(f"int4 block size {self.block_size} must be 16, 32, 64 or 128")


@dataclass
class LoweringReport:
    """What lowering fused (counted in the graph) and what it deliberately did not."""

    fusions: dict[str, int] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"fusions": dict(self.fusions), "fallbacks": list(self.fallbacks)}


def lower(
    model: ir.Model,
    module,
    cfg,
    ep: ExecutionProvider,
    float_type: ir.DataType,
    int4: Int4 | None,
) -> LoweringReport:
    """Run the EP's passes and check each produced exactly the fusions the model implies."""
    report = LoweringReport(fallbacks=module.fallbacks())
    expected: dict[str, int] = {}
    packed = [m for m in module.modules() if isinstance(m, PackedLinear) and m.packed]
    report.fusions["packed_tensors"] = fold_packed_weights(model)
    expected["packed_tensors"] = sum(2 if m.biases else 1 for m in packed)  # weight (+ bias)
    if ep.has(SKIP_NORM):
        report.fusions["skip_norms"] = fuse_skip_norms(model)
        expected["skip_norms"] = module.expected_skip_norms()
    if int4 is not None:
        quantizers: dict[str, _LazyQ4] = {}  # a tied table is quantized once, head and rows
        report.fusions["int4_matmuls"] = quantize_matmuls(model, ep, int4, float_type, quantizers)
        expected["int4_matmuls"] = _linear_weights(module, int4)
        if int4.lm_head and ep.has(GATHER_Q4):
            table = module.embedding_table().name
            report.fusions["int4_embeddings"] = quantize_embedding(
                model, table, int4, float_type, quantizers
            )
            expected["int4_embeddings"] = 1
    pretranspose(model)
    if ep.has(GQA):
        report.fusions[GQA] = count_ops(model)[f"{MS_DOMAIN}.{GQA}"]
        expected[GQA] = cfg.num_hidden_layers if module.uses_gqa() else 0
    for name, want in expected.items():
        if report.fusions.get(name, 0) != want:
            raise LoweringError(
                f"lowering for {ep.name} expected {want} {name}, found "
                f"{report.fusions.get(name, 0)}"
            )
    return report


def _linear_weights(module, int4: Int4) -> int:
    """How many weight matrices the model multiplies by (after packing)."""
    count = 1 if int4.lm_head and module.cfg.tie_word_embeddings else 0
    for name, m in module.named_modules():
        if isinstance(m, PackedLinear):
            count += 1 if m.packed else len(m.weights)
        elif isinstance(m, Conv1D) or (
            isinstance(m, Linear) and (name != "lm_head" or int4.lm_head)
        ):
            count += 1
    return count


def quantize_matmuls(
    model: ir.Model,
    ep: ExecutionProvider,
    int4: Int4,
    act: ir.DataType,
    quantizers: dict[str, _LazyQ4],
) -> int:
    """MatMul by a weight initializer -> int4 weights, lazily quantized while written.

    EPs with MatMulNBits get that kernel; the portable graph gets the standard
    `MatMul(x, DequantizeLinear(int4 values, scales))`. Returns how many were quantized.
    """
    graph, count = model.graph, 0
    for node in list(graph):
        found = _weight_of(node) if node.op_type == "MatMul" and node.domain == "" else None
        if found is None and int4.lm_head:
            found = _tied_head_of(node)
        if found is None:
            continue
        weight, transpose, layout_nk = found
        if weight.name == LM_HEAD and not int4.lm_head:
            continue
        if ep.has(MATMUL_NBITS):
            quantized = quantizers.setdefault(
                weight.name, _LazyQ4(weight.const_value, layout_nk, int4)
            )
            _to_matmul_nbits(graph, node, weight.name, quantized, ep, act)
            model.opset_imports.setdefault(MS_DOMAIN, 1)
        else:
            quantized = _LazyQ4(weight.const_value, layout_nk, int4, to_dequantize_linear)
            _to_dequantize_linear(graph, node, weight.name, quantized, act)
            if node.op_type == "Gemm":  # DequantizeLinear gives [K, N]: no transpose left
                node.attributes["transB"] = ir.AttrInt64("transB", 0)
        if transpose is not None:
            graph.remove(transpose, safe=True)
        if not weight.uses():  # a tied head's table stays for the embedding Gather
            graph.initializers.pop(weight.name)
        count += 1
    return count


def quantize_embedding(
    model: ir.Model, table: str, int4: Int4, act: ir.DataType, quantizers: dict[str, _LazyQ4]
) -> int:
    """Gather(embedding table, ids) -> com.microsoft GatherBlockQuantized over int4 rows.

    The packed codes of a MatMulNBits weight are exactly the kernel's uint8 `data` (two
    4-bit values per byte, low nibble first, zero point 8 when symmetric), reshaped to
    [rows, columns / 2] once the padding of a partial last block is cut off (the kernel
    counts ceil(columns / block_size) scales per row). Returns how many Gathers were
    replaced (0 or 1).
    """
    graph = model.graph
    for node in list(graph):
        weight = node.inputs[0] if node.op_type == "Gather" and node.domain == "" else None
        if weight is None or weight.name != table or not _initializer(weight):
            continue
        q = quantizers.get(weight.name) or _LazyQ4(weight.const_value, True, int4)
        _swap(graph, node, _gather_q4(graph, node, weight, q, act))
        if not weight.uses():
            graph.initializers.pop(weight.name)
        model.opset_imports.setdefault(MS_DOMAIN, 1)
        return 1
    return 0


def _gather_q4(graph, gather, weight, q: _LazyQ4, act: ir.DataType) -> ir.Node:
    rows, columns = weight.shape.dims
    int4 = q.int4
    base, act_np = f"{weight.name}.gather_q4", act.numpy()
    inputs = [
        _lazy_initializer(
            graph,
            f"{base}.data",
            q.part(lambda r: ir.Tensor(r.packed.reshape(rows, -1)[:, : columns // 2])),
            ir.DataType.UINT8,
            [rows, columns // 2],
        ),
        gather.inputs[1],
        _lazy_initializer(
            graph,
            f"{base}.scales",
            q.part(lambda r: ir.Tensor(r.scales.astype(act_np), dtype=act)),
            act,
            [rows, q.blocks],
        ),
    ]
    if not int4.symmetric:
        inputs.append(
            _lazy_initializer(
                graph,
                f"{base}.zero_points",
                q.part(lambda r: ir.Tensor(r.zero_points)),
                ir.DataType.UINT8,
                [rows, -(-q.blocks // 2)],
            )
        )
    return ir.node(
        "GatherBlockQuantized",
        inputs,
        attributes={
            "bits": 4,
            "block_size": int4.block_size,
            "gather_axis": 0,
            "quantize_axis": 1,
        },
        domain=MS_DOMAIN,
        name=f"{gather.name}/q4",
    )


def _tied_head_of(node: ir.Node):
    """A tied lm_head, `Gemm(hidden, embedding_table, transB=1)`: the table is [N, K]."""
    if node.op_type != "Gemm" or node.domain != "" or len(node.inputs) != 2:
        return None
    table = node.inputs[1]
    plain = all(node.attributes.get_float(a, 1.0) == 1.0 for a in ("alpha", "beta"))
    if not (_initializer(table) and plain and node.attributes.get_int("transB", 0) == 1):
        return None
    return table, None, True


def _weight_of(matmul: ir.Node):
    """(weight initializer, its Transpose node or None, True if stored [N, K]) or None."""
    b = matmul.inputs[1]
    producer = b.producer()
    if producer is not None and producer.op_type == "Transpose" and _only_use(b):
        weight = producer.inputs[0]
        if _initializer(weight) and _only_use(weight) and weight.shape.rank() == 2:
            return weight, producer, True
        return None
    if _initializer(b) and _only_use(b) and b.shape.rank() == 2:
        return b, None, False
    return None


class _LazyQ4:
    """Quantizes one weight on first use and serves its parts (packed values, scales, zero
    points) from that one result, which is dropped once every part was written. A lock
    keeps this right when the writer runs on several threads."""

    def __init__(self, source: ir.TensorProtocol, layout_nk: bool, int4: Int4, form=None):
        self.source, self.layout_nk, self.int4 = source, layout_nk, int4
        self.form = form or (lambda q4: q4)  # the encoding the parts are picked from
        self._result = None
        self._parts = 0  # registered parts; the result is dropped once each was served
        self._served = 0
        self._lock = threading.Lock()
        dims = source.shape.dims
        self.n, self.k = dims if layout_nk else dims[::-1]
        self.blocks = -(-self.k // int4.block_size)

    def part(self, pick):
        self._parts += 1

        def compute() -> ir.Tensor:
            with self._lock:
                return serve()

        def serve() -> ir.Tensor:
            if self._result is None:
                weight = source_array(self.source)
                weight = weight if self.layout_nk else np.ascontiguousarray(weight.T)
                q4 = quantize_q4(weight, self.int4.block_size, self.int4.symmetric)
                self._result = self.form(q4)
            tensor = pick(self._result)
            self._served += 1
            if self._served == self._parts:  # every part written: drop the quantized copy
                self._result, self._served = None, 0
            return tensor

        return compute


def _lazy_initializer(graph: ir.Graph, name: str, compute, dtype, dims) -> ir.Value:
    shape = ir.Shape(dims)
    value = ir.Value(
        name=name,
        shape=shape,
        type=ir.TensorType(dtype),
        const_value=ir.LazyTensor(compute, dtype=dtype, shape=shape, name=name),
    )
    graph.register_initializer(value)
    return value


def _to_matmul_nbits(graph, matmul, name, q: _LazyQ4, ep: ExecutionProvider, act) -> None:
    act_np = act.numpy()
    bs = q.int4.block_size
    inputs = [
        matmul.inputs[0],
        _lazy_initializer(
            graph,
            f"{name}.q4",
            q.part(lambda r: ir.Tensor(r.packed)),
            ir.DataType.UINT8,
            [q.n, q.blocks, bs // 2],
        ),
        _lazy_initializer(
            graph,
            f"{name}.scales",
            q.part(lambda r: ir.Tensor(r.scales.astype(act_np), dtype=act)),
            act,
            [q.n, q.blocks],
        ),
    ]
    if not q.int4.symmetric:
        inputs.append(
            _lazy_initializer(
                graph,
                f"{name}.zero_points",
                q.part(lambda r: ir.Tensor(r.zero_points)),
                ir.DataType.UINT8,
                [q.n, -(-q.blocks // 2)],
            )
        )
    node = ir.node(
        "MatMulNBits",
        inputs,
        attributes={
            "K": q.k,
            "N": q.n,
            "bits": 4,
            "block_size": bs,
            "accuracy_level": ep.int4_accuracy_level,
        },
        domain=MS_DOMAIN,
        name=f"{matmul.name}/q4",
    )
    _swap(graph, matmul, node)


def _to_dequantize_linear(graph, matmul, name, q: _LazyQ4, act) -> None:
    act_np = act.numpy()
    values_type = ir.DataType.INT4 if q.int4.symmetric else ir.DataType.UINT4

    def pick_values(r):
        return ir.Tensor(r[0], dtype=values_type)

    def pick_scales(r):
        return ir.Tensor(r[1].astype(act_np), dtype=act)

    dq_inputs = [
        _lazy_initializer(graph, f"{name}.q4", q.part(pick_values), values_type, [q.k, q.n]),
        _lazy_initializer(graph, f"{name}.scales", q.part(pick_scales), act, [q.blocks, q.n]),
    ]
    if not q.int4.symmetric:

        def pick_zero_points(r):
            return ir.Tensor(r[2], dtype=ir.DataType.UINT4)

        dq_inputs.append(
            _lazy_initializer(
                graph,
                f"{name}.zero_points",
                q.part(pick_zero_points),
                ir.DataType.UINT4,
                [q.blocks, q.n],
            )
        )
    dq = ir.node(
        "DequantizeLinear",
        dq_inputs,
        attributes={"axis": DEQUANTIZE_LINEAR_AXIS, "block_size": q.int4.block_size},
        name=f"{matmul.name}/dq",
    )
    graph.insert_before(matmul, dq)
    matmul.replace_input_with(1, dq.outputs[0])


def _swap(graph: ir.Graph, old: ir.Node, new: ir.Node) -> None:
    """Replace `old` by `new`, keeping the output's name (it may be a graph output)."""
    graph.insert_before(old, new)
    name = old.outputs[0].name
    old.outputs[0].replace_all_uses_with(new.outputs[0], replace_graph_outputs=True)
    graph.remove(old, safe=True)
    new.outputs[0].name = name

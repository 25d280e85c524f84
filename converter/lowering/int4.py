"""int4 passes: MatMul weights to MatMulNBits (or the standard DequantizeLinear form), the
embedding table to GatherBlockQuantized; quantized lazily while the package is written."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from converter.errors import MobiusError
from converter.execution_providers import MATMUL_NBITS, ExecutionProvider
from converter.lowering.lazy import LazyResult, lazy_initializer, swap
from converter.lowering.matmul_weights import weight_of
from converter.lowering.passes import MS_DOMAIN, is_initializer
from converter.quantize import DEQUANTIZE_LINEAR_AXIS, quantize_q4, to_dequantize_linear
from converter.weights import source_array, source_rows


@dataclass(frozen=True)
class Int4:
    """int4 weight quantization settings (block-wise round-to-nearest)."""

    block_size: int = 32
    symmetric: bool = True
    lm_head: bool = False  # also quantize the lm_head (a tied one gets an int4 copy)

    def __post_init__(self) -> None:
        if self.block_size not in (16, 32, 64, 128):
            raise MobiusError(f"int4 block size {self.block_size} must be 16, 32, 64 or 128")


def quantize_matmuls(
    model: ir.Model,
    ep: ExecutionProvider,
    int4: Int4,
    act: ir.DataType,
    quantizers: dict[str, _LazyQ4],
    heads: set[str],
    float_only: set[str] = frozenset(),
) -> int:
    """MatMul by a weight initializer -> int4 weights, lazily quantized while written.

    EPs with MatMulNBits get that kernel; the portable graph gets the standard
    `MatMul(x, DequantizeLinear(int4 values, scales))`. The LM head's weights (`heads`) only
    with `int4.lm_head`; never those in `float_only` (MoE routers). Returns how many were
    quantized.
    """
    graph, count = model.graph, 0
    dequantizers: dict[str, _LazyQ4] = {}
    for node in list(graph):
        found = weight_of(node) if node.op_type == "MatMul" and node.domain == "" else None
        if found is None and int4.lm_head:
            found = _tied_head_of(node)
        if found is None:
            continue
        weight, transpose, layout_nk = found
        if weight.name in float_only or (weight.name in heads and not int4.lm_head):
            continue
        if ep.has(MATMUL_NBITS):
            quantized = quantizers.setdefault(
                weight.name, _LazyQ4(weight.const_value, layout_nk, int4)
            )
            _to_matmul_nbits(graph, node, weight.name, quantized, ep, act)
            model.opset_imports.setdefault(MS_DOMAIN, 1)
        else:
            quantized = dequantizers.get(weight.name) or _LazyQ4(
                weight.const_value, layout_nk, int4, to_dequantize_linear
            )
            dequantizers[weight.name] = quantized
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
        if weight is None or weight.name != table or not is_initializer(weight):
            continue
        q = quantizers.get(weight.name) or _LazyQ4(weight.const_value, True, int4)
        swap(graph, node, _gather_q4(graph, node, weight, q, act))
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
        lazy_initializer(
            graph,
            f"{base}.data",
            q.part(lambda r: ir.Tensor(r.packed.reshape(rows, -1)[:, : columns // 2])),
            ir.DataType.UINT8,
            [rows, columns // 2],
        ),
        gather.inputs[1],
        lazy_initializer(
            graph,
            f"{base}.scales",
            q.part(lambda r: ir.Tensor(r.scales.astype(act_np), dtype=act)),
            act,
            [rows, q.blocks],
        ),
    ]
    if not int4.symmetric:
        inputs.append(
            lazy_initializer(
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
    if not (is_initializer(table) and plain and node.attributes.get_int("transB", 0) == 1):
        return None
    return table, None, True


class _LazyQ4(LazyResult):
    """One weight's int4 quantization, computed on first use and served by parts (packed
    values, scales, zero points) in the encoding `form` picks them from."""

    def __init__(self, source: ir.TensorProtocol, layout_nk: bool, int4: Int4, form=None):
        super().__init__(self._quantize)
        self.source, self.layout_nk, self.int4 = source, layout_nk, int4
        self.form = form or (lambda q4: q4)  # the encoding the parts are picked from
        self.initializers: dict[str, list[ir.Value]] = {}  # per kernel, shared by its nodes
        dims = source.shape.dims
        self.n, self.k = dims if layout_nk else dims[::-1]
        self.blocks = -(-self.k // int4.block_size)

    def _quantize(self):
        if self.layout_nk:
            weight = source_rows(self.source)
        else:
            weight = np.ascontiguousarray(source_array(self.source).T)
        return self.form(quantize_q4(weight, self.int4.block_size, self.int4.symmetric))


def _to_matmul_nbits(graph, matmul, name, q: _LazyQ4, ep: ExecutionProvider, act) -> None:
    if "nbits" not in q.initializers:
        q.initializers["nbits"] = _nbits_initializers(graph, name, q, act)
    inputs = [matmul.inputs[0], *q.initializers["nbits"]]
    node = ir.node(
        "MatMulNBits",
        inputs,
        attributes={
            "K": q.k,
            "N": q.n,
            "bits": 4,
            "block_size": q.int4.block_size,
            "accuracy_level": ep.int4_accuracy_level,
        },
        domain=MS_DOMAIN,
        name=f"{matmul.name}/q4",
    )
    swap(graph, matmul, node)


def _nbits_initializers(graph, name, q: _LazyQ4, act) -> list[ir.Value]:
    act_np = act.numpy()
    bs = q.int4.block_size
    values = [
        lazy_initializer(
            graph,
            f"{name}.q4",
            q.part(lambda r: ir.Tensor(r.packed)),
            ir.DataType.UINT8,
            [q.n, q.blocks, bs // 2],
        ),
        lazy_initializer(
            graph,
            f"{name}.scales",
            q.part(lambda r: ir.Tensor(r.scales.astype(act_np), dtype=act)),
            act,
            [q.n, q.blocks],
        ),
    ]
    if not q.int4.symmetric:
        values.append(
            lazy_initializer(
                graph,
                f"{name}.zero_points",
                q.part(lambda r: ir.Tensor(r.zero_points)),
                ir.DataType.UINT8,
                [q.n, -(-q.blocks // 2)],
            )
        )
    return values


def _to_dequantize_linear(graph, matmul, name, q: _LazyQ4, act) -> None:
    if "dq" not in q.initializers:
        q.initializers["dq"] = _dq_initializers(graph, name, q, act)
    dq = ir.node(
        "DequantizeLinear",
        q.initializers["dq"],
        attributes={"axis": DEQUANTIZE_LINEAR_AXIS, "block_size": q.int4.block_size},
        name=f"{matmul.name}/dq",
    )
    graph.insert_before(matmul, dq)
    matmul.replace_input_with(1, dq.outputs[0])


def _dq_initializers(graph, name, q: _LazyQ4, act) -> list[ir.Value]:
    act_np = act.numpy()
    values_type = ir.DataType.INT4 if q.int4.symmetric else ir.DataType.UINT4

    def pick_values(r):
        return ir.Tensor(r[0], dtype=values_type)

    def pick_scales(r):
        return ir.Tensor(r[1].astype(act_np), dtype=act)

    values = [
        lazy_initializer(graph, f"{name}.q4", q.part(pick_values), values_type, [q.k, q.n]),
        lazy_initializer(graph, f"{name}.scales", q.part(pick_scales), act, [q.blocks, q.n]),
    ]
    if not q.int4.symmetric:

        def pick_zero_points(r):
            return ir.Tensor(r[2], dtype=ir.DataType.UINT4)

        values.append(
            lazy_initializer(
                graph,
                f"{name}.zero_points",
                q.part(pick_zero_points),
                ir.DataType.UINT4,
                [q.blocks, q.n],
            )
        )
    return values

"""int4 passes: MatMul weights to MatMulNBits (or the standard DequantizeLinear form), the
embedding table to GatherBlockQuantized; quantized lazily while the package is written. The
LM head and the token table get their own precision (8-bit blocks by default)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from converter.errors import MobiusError, WeightsError
from converter.execution_providers import MATMUL_NBITS, ExecutionProvider
from converter.lowering.lazy import LazyResult, lazy_initializer, swap
from converter.lowering.matmul_weights import layout_name, weight_of
from converter.lowering.passes import MS_DOMAIN, is_initializer, shared_constant
from converter.quantize import (
    DEFAULT_METHOD,
    DEQUANTIZE_LINEAR_AXIS,
    METHODS,
    quantize_blocks,
    to_dequantize_linear,
)
from converter.weights import source_array, source_rows


@dataclass(frozen=True)
class Int4:
    """int4 weight quantization settings (block-wise; `method` "rtn" or "search" picks the
    scales, converter/quantize.py). `head_bits`: the LM head's and the token table's (where the
    EP gathers quantized rows) bits, 8 or 4; None keeps them in the activation dtype. A head
    tied to the table shares its quantized codes, or gets a quantized copy of a float one."""

    block_size: int = 32
    symmetric: bool = True
    head_bits: int | None = 8
    # the checkpoint holds the weights packed (converter/olive_weights.py): they are bound as
    # they are, and a float weight is refused rather than quantized here
    prequantized: bool = False
    method: str = DEFAULT_METHOD

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise MobiusError(f"int4 method {self.method!r} must be one of {', '.join(METHODS)}")
        if self.block_size not in (16, 32, 64, 128):
            raise MobiusError(f"int4 block size {self.block_size} must be 16, 32, 64 or 128")
        if self.head_bits not in (None, 4, 8):
            raise MobiusError(f"int4 head bits {self.head_bits} must be 4 or 8 (or float)")

    @property
    def head_block_size(self) -> int:
        """The head's and the token table's blocks: 8-bit ones keep their precision over 128
        values (the largest block: a quarter of the scales, and MatMulNBits' 8-bit kernel
        reads a head of 128-blocks 1.6x faster than one of 32); 4-bit ones are int4's."""
        return 128 if self.head_bits == 8 else self.block_size


def quantize_matmuls(
    model: ir.Model,
    ep: ExecutionProvider,
    int4: Int4,
    act: ir.DataType,
    quantizers: dict[tuple[str, bool], tuple[str, _LazyQ4]],
    heads: set[str],
    float_only: set[str] = frozenset(),
) -> int:
    """MatMul by a weight initializer -> int4 weights, lazily quantized while written.

    EPs with MatMulNBits get that kernel; the portable graph gets the standard
    `MatMul(x, DequantizeLinear(int4 values, scales))`. The LM head's weights (`heads`) get
    `int4.head_bits`; those in `float_only` (MoE routers) stay float. Returns how many were
    quantized.
    """
    graph, count = model.graph, 0
    dequantizers: dict[tuple[str, bool], tuple[str, _LazyQ4]] = {}
    for node in list(graph):
        found = weight_of(node) if node.op_type == "MatMul" and node.domain == "" else None
        tied = found is None and int4.head_bits is not None and _tied_head_of(node)
        found = found or tied
        if not found:
            continue
        weight, transpose, layout_nk = found
        head = bool(tied) or weight.name in heads
        if weight.name in float_only or (head and int4.head_bits is None):
            continue
        if int4.prequantized and getattr(weight.const_value, "packed", None) is None:
            raise WeightsError(
                f"'{weight.name}' is floating point in a checkpoint quantized by Olive, whose "
                "non-expert projections mobius binds as packed INT4 only (no requantization)"
            )
        bits, block_size = (int4.head_bits, int4.head_block_size) if head else (4, None)
        key = (weight.name, layout_nk)
        if ep.has(MATMUL_NBITS):
            if key not in quantizers:
                q = _LazyQ4(weight.const_value, layout_nk, int4, bits=bits, block_size=block_size)
                quantizers[key] = (layout_name(quantizers, *key), q)
            name, quantized = quantizers[key]
            _to_matmul_nbits(graph, node, name, quantized, ep, act)
            model.opset_imports.setdefault(MS_DOMAIN, 1)
        else:
            if key not in dequantizers:
                q = _LazyQ4(
                    weight.const_value, layout_nk, int4, to_dequantize_linear, bits, block_size
                )
                dequantizers[key] = (layout_name(dequantizers, *key), q)
            name, quantized = dequantizers[key]
            _to_dequantize_linear(graph, node, name, quantized, act)
            if node.op_type == "Gemm":  # DequantizeLinear gives [K, N]: no transpose left
                node.attributes["transB"] = ir.AttrInt64("transB", 0)
        if transpose is not None:
            graph.remove(transpose, safe=True)
        if not weight.uses():  # a tied head's table stays for the embedding Gather
            graph.initializers.pop(weight.name)
        count += 1
    return count


def quantize_embedding(
    model: ir.Model,
    table: str,
    int4: Int4,
    act: ir.DataType,
    quantizers: dict[tuple[str, bool], tuple[str, _LazyQ4]],
) -> int:
    """Gather(embedding table, ids) -> com.microsoft GatherBlockQuantized over rows of
    `int4.head_bits`.

    The codes of a MatMulNBits weight are exactly the kernel's uint8 `data` (4 bits: two
    values per byte, low nibble first, zero point 8 when symmetric; 8 bits: one per byte,
    zero point 128) once viewed as [rows, padded columns * bits / 8], with the same scales
    and zero points, so a head tied to the table shares them. Returns how many Gathers were
    replaced (0 or 1).
    """
    graph = model.graph
    for node in list(graph):
        weight = node.inputs[0] if node.op_type == "Gather" and node.domain == "" else None
        if weight is None or weight.name != table or not is_initializer(weight):
            continue
        tied = quantizers.get((weight.name, True))  # a head's read of the table, [N, K]
        q = (
            tied[1]
            if tied
            else _LazyQ4(
                weight.const_value, True, int4, bits=int4.head_bits, block_size=int4.head_block_size
            )
        )
        swap(graph, node, _gather_q4(graph, node, weight, q, act))
        if not weight.uses():
            graph.initializers.pop(weight.name)
        model.opset_imports.setdefault(MS_DOMAIN, 1)
        return 1
    return 0


def _gather_q4(graph, gather, weight, q: _LazyQ4, act: ir.DataType) -> ir.Node:
    """GatherBlockQuantized over `q`'s MatMulNBits codes viewed as [rows, padded columns *
    bits / 8] (a tied head's very initializers: the table is stored once), sliced back to the
    table's width when its last block is partial."""
    rows, columns = weight.shape.dims
    codes, *scales_and_zero_points = _nbits_of(graph, weight.name, q, act)
    padded = q.blocks * q.block_size
    view = _int64(graph, f"{codes.name}.rows", [rows, padded * q.bits // 8])
    reshape = ir.node("Reshape", [codes, view], name=f"{gather.name}/rows")
    graph.insert_before(gather, reshape)
    gathered = ir.node(
        "GatherBlockQuantized",
        [reshape.outputs[0], gather.inputs[1], *scales_and_zero_points],
        attributes={
            "bits": q.bits,
            "block_size": q.block_size,
            "gather_axis": 0,
            "quantize_axis": 1,
        },
        domain=MS_DOMAIN,
        name=f"{gather.name}/q4",
    )
    if padded == columns:
        return gathered
    graph.insert_before(gather, gathered)
    bounds = [(f"{codes.name}.{n}", [v]) for n, v in (("start", 0), ("end", columns), ("axis", -1))]
    slice_inputs = [gathered.outputs[0], *(_int64(graph, n, v) for n, v in bounds)]
    return ir.node("Slice", slice_inputs, name=f"{gather.name}/columns")


def _int64(graph: ir.Graph, name: str, values: list[int]) -> ir.Value:
    return shared_constant(graph, name, lambda: np.array(values, np.int64))


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
    """One weight's block quantization (`bits`, blocks of `block_size`: int4's by default),
    computed on first use and served by parts (packed values, scales, zero points) in the
    encoding `form` picks them from."""

    def __init__(
        self,
        source: ir.TensorProtocol,
        layout_nk: bool,
        int4: Int4,
        form=None,
        bits: int = 4,
        block_size: int | None = None,
    ):
        super().__init__(self._quantize)
        self.source, self.layout_nk, self.int4 = source, layout_nk, int4
        self.bits, self.block_size = bits, block_size or int4.block_size
        self.form = form or (lambda q4: q4)  # the encoding the parts are picked from
        self.initializers: dict[str, list[ir.Value]] = {}  # per kernel, shared by its nodes
        dims = source.shape.dims
        self.n, self.k = dims if layout_nk else dims[::-1]
        self.blocks = -(-self.k // self.block_size)

    @property
    def zero_point_width(self) -> int:
        """Bytes of zero points per row: 4-bit ones are packed two to a byte."""
        return -(-self.blocks // 2) if self.bits == 4 else self.blocks

    def _quantize(self):
        packed = getattr(self.source, "packed", None)
        if packed is not None and self.layout_nk and _keeps(packed.info, self):
            return self.form(packed.load())  # already quantized alike: bound as it is
        if self.layout_nk:
            weight = source_rows(self.source)
        else:
            weight = np.ascontiguousarray(source_array(self.source).T)
        int4 = self.int4
        quantized = quantize_blocks(weight, self.block_size, int4.symmetric, self.bits, int4.method)
        return self.form(quantized)


# DequantizeLinear's value types by bits: (symmetric, asymmetric)
_DQ_TYPES = {4: (ir.DataType.INT4, ir.DataType.UINT4), 8: (ir.DataType.INT8, ir.DataType.UINT8)}


def _keeps(info, q: _LazyQ4) -> bool:
    """Blocks a checkpoint already holds (`info`: converter.config.olive's Projection) are the
    ones `q`'s settings would make."""
    return (info.bits, info.symmetric, info.block_size) == (q.bits, q.int4.symmetric, q.block_size)


def _to_matmul_nbits(graph, matmul, name, q: _LazyQ4, ep: ExecutionProvider, act) -> None:
    inputs = [matmul.inputs[0], *_nbits_of(graph, name, q, act)]
    node = ir.node(
        "MatMulNBits",
        inputs,
        attributes={
            "K": q.k,
            "N": q.n,
            "bits": q.bits,
            "block_size": q.block_size,
            "accuracy_level": ep.int4_accuracy_level,
        },
        domain=MS_DOMAIN,
        name=f"{matmul.name}/q4",
    )
    swap(graph, matmul, node)


def _nbits_of(graph, name, q: _LazyQ4, act) -> list[ir.Value]:
    """`q`'s MatMulNBits initializers (codes, scales, zero points), made on first use."""
    if "nbits" not in q.initializers:
        q.initializers["nbits"] = _nbits_initializers(graph, name, q, act)
    return q.initializers["nbits"]


def _nbits_initializers(graph, name, q: _LazyQ4, act) -> list[ir.Value]:
    act_np = act.numpy()
    values = [
        lazy_initializer(
            graph,
            f"{name}.q{q.bits}",
            q.part(lambda r: ir.Tensor(r.packed)),
            ir.DataType.UINT8,
            [q.n, q.blocks, q.block_size * q.bits // 8],
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
                [q.n, q.zero_point_width],
            )
        )
    return values


def _to_dequantize_linear(graph, matmul, name, q: _LazyQ4, act) -> None:
    if "dq" not in q.initializers:
        q.initializers["dq"] = _dq_initializers(graph, name, q, act)
    dq = ir.node(
        "DequantizeLinear",
        q.initializers["dq"],
        attributes={"axis": DEQUANTIZE_LINEAR_AXIS, "block_size": q.block_size},
        name=f"{matmul.name}/dq",
    )
    graph.insert_before(matmul, dq)
    matmul.replace_input_with(1, dq.outputs[0])


def _dq_initializers(graph, name, q: _LazyQ4, act) -> list[ir.Value]:
    act_np = act.numpy()
    signed, unsigned = _DQ_TYPES[q.bits]
    values_type = signed if q.int4.symmetric else unsigned

    def pick_values(r):
        return ir.Tensor(r[0], dtype=values_type)

    def pick_scales(r):
        return ir.Tensor(r[1].astype(act_np), dtype=act)

    values = [
        lazy_initializer(graph, f"{name}.q{q.bits}", q.part(pick_values), values_type, [q.k, q.n]),
        lazy_initializer(graph, f"{name}.scales", q.part(pick_scales), act, [q.blocks, q.n]),
    ]
    if not q.int4.symmetric:

        def pick_zero_points(r):
            return ir.Tensor(r[2], dtype=unsigned)

        values.append(
            lazy_initializer(
                graph,
                f"{name}.zero_points",
                q.part(pick_zero_points),
                unsigned,
                [q.blocks, q.n],
            )
        )
    return values

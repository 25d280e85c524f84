"""An Olive-quantized checkpoint bound without requantizing (settings: converter/config/olive.py).

Olive saves a quantized parameter `<name>` as `<name>_qweight` (uint8, each row's codes packed
along K as converter/packed_bits.py describes), `<name>_scales` [..., K / group_size] in the
model's float dtype and, when asymmetric, `<name>_qzeros` (the blocks' zero-point codes packed
the same way); symmetric codes are offset by 2^(bits - 1). Fused experts are K-last:
`<experts>.gate_up_proj` [E, 2I, H] (gate rows, then up rows) and `<experts>.down_proj` [E, H, I].

- A Linear weight [N, K] is the model-wide INT4: its bytes are MatMulNBits' `B`
  ([N, K / block, block / 2]), its scales and zero points MatMulNBits' own.
- The MoE kernel's `fc1` [E, 2I, H] reads gate_up_proj with gate and up rows (and their scales
  and zero points) interleaved, as QMoE's swiglu_fusion=1 wants; `fc2` [E, H, I] is down_proj
  as it is. The lowering (converter/lowering/packed_qmoe.py) binds them into QMoE.

Every check runs while the assemblies are made, before anything is built, and names the tensor
and the rule it breaks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from converter.components.experts import interleave
from converter.config.olive import OliveQuantization, Projection
from converter.dtypes import NUMPY_OF
from converter.errors import WeightsError
from converter.packed_bits import packed_width, padding_is_zero, unpack_codes
from converter.quantize import BlockWeight, cast_scales
from converter.weights import Assembly, Checkpoint, Packing

QWEIGHT, SCALES, QZEROS = "_qweight", "_scales", "_qzeros"
INT3 = 3
INT3_ZERO_POINT = 4  # the unsigned offset of logical zero
INT3_BLOCK_SIZES = (32, 64, 128)
INT3_ACTIVATIONS = (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)
_FLOATS = ("F32", "F16", "BF16")
_SAFETENSORS_OF = {
    ir.DataType.FLOAT: "F32",
    ir.DataType.FLOAT16: "F16",
    ir.DataType.BFLOAT16: "BF16",
}


@dataclass(frozen=True)
class ExpertPack:
    """One expert projection's QMoE inputs, as the checkpoint packed them."""

    weights: np.ndarray  # uint8 [E, N, packed_width(K, bits)]
    scales: np.ndarray  # [E, N, K / block_size], the checkpoint's float dtype
    zero_points: np.ndarray | None  # uint8 [E, N, packed_width(blocks, bits)]; None: the offset


def olive_assemblies(
    parameters: Iterable[ir.Value], checkpoint: Checkpoint, olive: OliveQuantization, act
) -> dict[str, Assembly]:
    """How each parameter the checkpoint holds quantized is bound: the MoE kernel's expert
    stacks (`<experts>.fc1`, `<experts>.fc2`) and every Linear weight with a `_qweight`."""
    found, overridden = {}, {name for name, _ in olive.overrides}
    params = {p.name: p for p in parameters}
    for name, param in params.items():
        prefix, _, last = name.rpartition(".")
        if last == "fc1" and f"{prefix}.fc2" in params:
            fc1, fc2 = param, params[f"{prefix}.fc2"]
            found |= _expert_pair(prefix, fc1, fc2, checkpoint, olive, act)
            overridden -= {f"{prefix}.gate_up_proj", f"{prefix}.down_proj"}
        elif name + QWEIGHT in checkpoint.tensors and len(param.shape) == 2:
            found[name] = _linear(name, tuple(param.shape.dims), checkpoint, olive.model_wide, act)
    if overridden:
        raise WeightsError(
            f"quantization_config.overrides names {sorted(overridden)[0]!r}, which is not an "
            "expert projection of this model"
        )
    return found


def _linear(name: str, shape, checkpoint: Checkpoint, spec: Projection, act) -> Assembly:
    n, k = shape
    block = spec.block_size
    if k % block:
        raise WeightsError(f"'{name}': K = {k} is not a whole number of {block}-value blocks")
    blocks = k // block
    parts = _parts(checkpoint, name, spec, (n,), k, act)
    has_zero_points = len(parts) == 3

    def q4(arrays) -> BlockWeight:
        zero_points = arrays[2] if has_zero_points else None
        packed = arrays[0].reshape(n, blocks, block // 2)
        return BlockWeight(packed, arrays[1], zero_points, k, block)

    return Assembly(
        parts,
        lambda arrays: q4(arrays).dequantize(),
        frozenset({"U8"}),
        Packing(spec, q4),
    )


def _expert_pair(prefix, fc1, fc2, checkpoint, olive, act) -> dict[str, Assembly]:
    experts, rows, hidden = fc1.shape.dims
    inner = rows // 2
    gate_up, down = f"{prefix}.gate_up_proj", f"{prefix}.down_proj"
    first, second = olive.projection(gate_up), olive.projection(down)
    _check_pair(gate_up, first, down, second, hidden, inner, act)
    int3 = INT3 in (first.bits, second.bits)
    parts1 = _parts(checkpoint, gate_up, first, (experts, rows), hidden, act, exact_scales=int3)
    parts2 = _parts(checkpoint, down, second, (experts, hidden), inner, act, exact_scales=int3)
    return {
        fc1.name: _expert_assembly(parts1, first, hidden, interleaved=True),
        fc2.name: _expert_assembly(parts2, second, inner, interleaved=False),
    }


def _check_pair(gate_up, first: Projection, down, second: Projection, hidden, inner, act):
    """The rules QMoE puts on a pair of projections (one block size for both)."""
    if first.block_size != second.block_size:
        raise WeightsError(
            f"'{gate_up}' has blocks of {first.block_size} and '{down}' of "
            f"{second.block_size}: QMoE takes one block size for both projections"
        )
    block = first.block_size
    if block < 16 or block & (block - 1):
        raise WeightsError(
            f"'{gate_up}': QMoE's block size must be a power of two >= 16, not {block}"
        )
    for width, what in ((hidden, "hidden"), (inner, "intermediate")):
        if width % block:
            raise WeightsError(
                f"'{gate_up}': block size {block} does not divide the {what} size {width}"
            )
    if INT3 not in (first.bits, second.bits):
        return
    if block not in INT3_BLOCK_SIZES:
        raise WeightsError(
            f"'{gate_up}' / '{down}': pairs with INT3 need a block size of "
            f"{', '.join(map(str, INT3_BLOCK_SIZES))}, not {block}"
        )
    if act not in INT3_ACTIVATIONS:
        raise WeightsError(
            f"'{gate_up}' / '{down}': pairs with INT3 need f16 or bf16 activations, "
            f"the build's are {act.name.lower()}"
        )


def _parts(checkpoint, name, spec: Projection, lead: tuple, k: int, act, exact_scales=False):
    """The checked (name, shape) parts of one projection: values, scales and the zero points
    it binds; an INT3 projection's explicit zero points are checked and read, never bound.
    Its scales must stay finite in the activation dtype `act`, and with `exact_scales` (pairs
    with INT3) already have it."""
    blocks = k // spec.block_size
    weights = (name + QWEIGHT, (*lead, packed_width(k, spec.bits)))
    scales = (name + SCALES, (*lead, blocks))
    zero_points = (name + QZEROS, (*lead, packed_width(blocks, spec.bits)))
    _check(checkpoint, weights, ("U8",), f"INT{spec.bits} codes packed along K")
    dtypes = (_SAFETENSORS_OF[act],) if exact_scales else _FLOATS
    rule = f"one scale per block of {spec.block_size}"
    _check(checkpoint, scales, dtypes, f"{rule}, in the activation dtype" if exact_scales else rule)
    _check_scales(checkpoint.tensors[scales[0]], act)
    present = zero_points[0] in checkpoint.tensors
    if spec.symmetric and present and spec.bits != INT3:
        raise WeightsError(
            f"tensor '{zero_points[0]}': the projection is symmetric (zero point "
            f"{1 << (spec.bits - 1)}); only INT3 accepts explicit zero points, all 4"
        )
    if not spec.symmetric or present:
        _check(checkpoint, zero_points, ("U8",), "zero points packed as uint8 along the blocks")
    if spec.bits == INT3 and present:
        _check_int3_zero_points(checkpoint.tensors[zero_points[0]], blocks)
    return (weights, scales, zero_points) if not spec.symmetric or present else (weights, scales)


def _check(checkpoint, part, dtypes, rule: str) -> None:
    name, shape = part
    ref = checkpoint.tensors.get(name)
    if ref is None:
        raise WeightsError(f"tensor '{name}' is missing from the checkpoint ({rule})")
    if ref.dtype not in dtypes:
        raise WeightsError(
            f"tensor '{name}' is {ref.dtype}, expected {' or '.join(dtypes)} ({rule})"
        )
    if ref.shape != shape:
        raise WeightsError(
            f"tensor '{name}' has shape {list(ref.shape)}, expected {list(shape)} ({rule})"
        )


def _check_scales(ref, activation) -> None:
    cast_scales(ref.load(), NUMPY_OF[activation], ref.name)


def _check_int3_zero_points(ref, blocks: int) -> None:
    packed = ref.load()
    codes = unpack_codes(packed, INT3, blocks)
    if (codes != INT3_ZERO_POINT).any() or not padding_is_zero(packed, INT3, blocks):
        raise WeightsError(
            f"tensor '{ref.name}': INT3 zero points must all be {INT3_ZERO_POINT} (symmetric), "
            "with zero padding bits"
        )


def _expert_assembly(parts, spec: Projection, k: int, interleaved: bool) -> Assembly:
    bound_zero_points = not spec.symmetric

    def pack(arrays) -> ExpertPack:
        weights, scales = arrays[0], arrays[1]
        zero_points = arrays[2] if bound_zero_points else None
        if interleaved:  # gate rows then up rows -> gate 0, up 0, gate 1, up 1, ...
            weights, scales = _interleaved(weights), _interleaved(scales)
            zero_points = None if zero_points is None else _interleaved(zero_points)
        return ExpertPack(weights, scales, zero_points)

    return Assembly(
        parts,
        lambda arrays: dequantize(pack(arrays), spec, k),
        frozenset({"U8"}),
        Packing(spec, pack),
    )


def _interleaved(stack: np.ndarray) -> np.ndarray:
    half = stack.shape[1] // 2
    return interleave(stack[:, :half], stack[:, half:])


def dequantize(pack: ExpertPack, spec: Projection, k: int) -> np.ndarray:
    """float32 [E, N, K]: (code - zero point) * scale."""
    blocks = k // spec.block_size
    codes = unpack_codes(pack.weights, spec.bits, k).astype(np.float32)
    codes = codes.reshape(*codes.shape[:-1], blocks, spec.block_size)
    if pack.zero_points is None:
        zero_points = np.float32(1 << (spec.bits - 1))
    else:
        zero_points = unpack_codes(pack.zero_points, spec.bits, blocks)[..., None]
    values = (codes - zero_points) * pack.scales.astype(np.float32)[..., None]
    return values.reshape(*codes.shape[:-2], k)

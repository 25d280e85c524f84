"""Safetensors checkpoints, read lazily and bound strictly by name.

Headers are parsed here (not by a framework) so every offset, shape and size is
checked against the file before a byte of tensor data is touched. Tensor data is read,
cast and written a band of rows at a time while the package is written (converter/rows.py),
so peak memory stays near a few bands, not one tensor.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx_ir as ir

from converter.dtypes import NUMPY_OF
from converter.errors import WeightsError
from converter.repo_files import INDEX, PICKLE_SUFFIXES
from converter.rows import FileRows, Rows, write_rows

_MAX_DIMS = 8
# Header caps, summed over a checkpoint's shards and checked on the raw bytes before any JSON
# is parsed. A header entry costs about 110 bytes and 11 JSON items (its name, dtype, shape
# dims, offsets and the separators between them): a DeepSeek-V3-sized checkpoint (61 layers,
# 256 routed experts, fp8 weights with scales: about 92k tensors) has about 10 MB of headers
# and 1M items. JSON items are counted as the `,` `:` and `[` bytes, an upper bound on the
# values json.loads would create.
MAX_HEADER_BYTES = 256 * 1024 * 1024
MAX_HEADER_ITEMS = 5_000_000
_COUNT_CHUNK = 1 << 20

_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "I64": np.dtype(np.int64),
    "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U8": np.dtype(np.uint8),
    "BOOL": np.dtype(np.bool_),
    "C64": np.dtype(np.complex64),  # FNet's stored DFT matrices (never bound)
}
_FLOATS = {"F64", "F32", "F16", "BF16"}

# Buffers some checkpoints carry that no graph needs, for every family.
ALWAYS_UNUSED = (r".*\.rotary_emb\.inv_freq",)


@dataclass(frozen=True)
class TensorRef:
    """Where one tensor lives: file, dtype, shape and absolute byte offset."""

    name: str
    file: Path
    dtype: str
    shape: tuple[int, ...]
    offset: int

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _DTYPES[self.dtype].itemsize

    def rows(self) -> FileRows:
        """The tensor, read by bands of rows."""
        return FileRows(self.file, self.offset, self.shape, _DTYPES[self.dtype])

    def load(self) -> np.ndarray:
        """A read-only memory map of the tensor (no copy)."""
        dtype = _DTYPES[self.dtype]
        count = math.prod(self.shape)
        if count == 0:
            return np.zeros(self.shape, dtype)
        data = np.memmap(self.file, dtype=dtype, mode="r", offset=self.offset, shape=(count,))
        return data.reshape(self.shape)


class Checkpoint:
    """All tensors of a folder's safetensors files, by name, without loading data."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.tensors: dict[str, TensorRef] = {}
        budget = HeaderBudget()
        for shard in self._shards():
            _read_ahead(shard)
            for ref in read_header(shard, budget):
                if ref.name in self.tensors:
                    raise WeightsError(f"tensor '{ref.name}' appears in two shards")
                self.tensors[ref.name] = ref

    @classmethod
    def of(cls, folder: Path, tensors: dict) -> Checkpoint:
        """A checkpoint over tensors indexed elsewhere (a GGUF file's), by module path: each
        entry has a TensorRef's `name`, `dtype`, `shape` and `load()`."""
        view = object.__new__(cls)
        view.folder, view.tensors = Path(folder), dict(tensors)
        return view

    def renamed(self, renames: Sequence[tuple[str, str]]) -> Checkpoint:
        """The same tensors under the module paths: each (pattern, replacement) of `renames`
        rewrites the names it matches, in order (a family's other checkpoint layouts). Errors
        keep naming the checkpoint's own tensor."""
        if not renames:
            return self
        view = Checkpoint.of(self.folder, {})
        for name, ref in self.tensors.items():
            target = name
            for pattern, replacement in renames:
                target = re.sub(pattern, replacement, target)
            if target in view.tensors:
                raise WeightsError(
                    f"tensors '{view.tensors[target].name}' and '{name}' are both '{target}'"
                )
            view.tensors[target] = ref
        return view

    def _shards(self) -> list[Path]:
        index = self.folder / INDEX
        if index.is_file():
            return self._indexed_shards(index)
        shards = sorted(p for p in self.folder.glob("*.safetensors") if p.is_file())
        if shards:
            return shards
        pickles = sorted(p.name for p in self.folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
        if pickles:
            raise WeightsError(
                f"{self.folder} has only pickle weights ({', '.join(pickles)}); mobius reads "
                "safetensors only and never unpickles files"
            )
        raise WeightsError(f"no *.safetensors weights in {self.folder}")

    def _indexed_shards(self, index: Path) -> list[Path]:
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (ValueError, RecursionError, KeyError, TypeError) as err:
            raise WeightsError(f"{INDEX} is malformed: {err}") from None
        if not isinstance(weight_map, dict):
            raise WeightsError(f"{INDEX}: 'weight_map' must be an object")
        shards = []
        for file_name in sorted({safe_file_name(name) for name in weight_map.values()}):
            shard = self.folder / file_name
            if not shard.is_file():
                raise WeightsError(f"{INDEX} names shard '{file_name}', which is missing")
            shards.append(shard)
        return shards


def _read_ahead(path: Path) -> None:
    """Ask the kernel to start reading the shard now, so the disk works while the graph is
    built and while earlier tensors are cast and written."""
    if hasattr(os, "posix_fadvise"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(fd)


def safe_file_name(name: object) -> str:
    """Refuse shard names that could escape the model folder."""
    if (
        not isinstance(name, str)
        or not name
        or "/" in name
        or "\\" in name
        or name in (".", "..")
        or ".." in name.split("/")
        or Path(name).is_absolute()
        or "\x00" in name
    ):
        raise WeightsError(f"refusing unsafe shard file name {name!r}")
    return name


@dataclass
class HeaderBudget:
    """What the headers read so far used of the caps shared by all shards of a checkpoint."""

    bytes: int = 0
    items: int = 0

    def spend(self, path: Path, f, header_len: int) -> None:
        """Count the header's JSON items on its raw bytes (1 MiB at a time, so neither time nor
        memory depends on what the header holds) and refuse it if the caps are exceeded."""
        self.bytes += header_len
        if self.bytes > MAX_HEADER_BYTES:
            raise WeightsError(
                f"{path.name}: safetensors headers exceed {MAX_HEADER_BYTES:,} bytes in all; "
                "refusing to parse them"
            )
        for start in range(0, header_len, _COUNT_CHUNK):
            chunk = f.read(min(_COUNT_CHUNK, header_len - start))
            self.items += chunk.count(b",") + chunk.count(b":") + chunk.count(b"[")
            if self.items > MAX_HEADER_ITEMS:
                raise WeightsError(
                    f"{path.name}: safetensors headers hold more than {MAX_HEADER_ITEMS:,} JSON "
                    "items (tensor entries and their fields) in all; refusing to parse them"
                )


def read_header(path: Path, budget: HeaderBudget | None = None) -> list[TensorRef]:
    """Parse and bounds-check one safetensors header, spending `budget` (a fresh one if None)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise WeightsError(f"{path.name} is not a safetensors file (too short)")
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len > size - 8:
            raise WeightsError(f"{path.name}: header length {header_len} is absurd for the file")
        (budget or HeaderBudget()).spend(path, f, header_len)
        f.seek(8)
        try:
            header = json.loads(f.read(header_len))
        except (ValueError, RecursionError) as err:
            raise WeightsError(f"{path.name}: corrupt safetensors header ({err})") from None
    if not isinstance(header, dict):
        raise WeightsError(f"{path.name}: corrupt safetensors header")
    data_start, data_size = 8 + header_len, size - 8 - header_len
    refs = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        refs.append(_tensor_ref(path, name, entry, data_start, data_size))
    _refuse_overlaps(path, refs)
    return refs


def _refuse_overlaps(path: Path, refs: list[TensorRef]) -> None:
    """Two tensors may not share bytes: each would read the other's data."""
    spans = sorted((ref.offset, ref.offset + ref.nbytes, ref.name) for ref in refs if ref.nbytes)
    for (_, end, name), (start, _, other) in itertools.pairwise(spans):
        if start < end:
            raise WeightsError(
                f"{path.name}: tensors '{name}' and '{other}' overlap in the data section"
            )


def _tensor_ref(path: Path, name: str, entry: object, data_start: int, data_size: int):
    where = f"{path.name}: tensor '{name}'"
    if not isinstance(entry, dict):
        raise WeightsError(f"{where} has a corrupt header entry")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in _DTYPES:
        raise WeightsError(f"{where} has unsupported dtype {dtype!r}")
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_DIMS
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise WeightsError(f"{where} has an invalid shape {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= data_size
    ):
        raise WeightsError(f"{where} has data offsets {offsets!r} outside the file")
    if offsets[1] - offsets[0] != math.prod(shape) * _DTYPES[dtype].itemsize:
        raise WeightsError(f"{where}: shape {shape} does not match its {dtype} byte size")
    return TensorRef(name, path, dtype, tuple(shape), data_start + offsets[0])


@dataclass(frozen=True)
class EitherShape:
    """A checkpoint tensor saved in one of several layouts told apart by shape (the first
    where several fit); the assembly's `build` sees which by its array's shape."""

    shapes: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Packed:
    """A weight the checkpoint holds already quantized: `info` says how (converter.config.olive's
    Projection), `load()` gives the packed parts its kernel binds as they are (never
    requantized)."""

    info: Any
    load: Callable[[], Any]


@dataclass(frozen=True)
class Packing:
    """An assembly's packed form: `info`, and `build` turning the parts' arrays into what
    Packed.load gives."""

    info: Any
    build: Callable[[list[np.ndarray]], Any]


@dataclass(frozen=True)
class Assembly:
    """A parameter made from several checkpoint tensors when the package is written (experts
    stacked into one tensor, gate and up rows interleaved). `parts` names each tensor with the
    shape it must have (or an EitherShape); `build` gets their arrays, in the checkpoint dtype,
    in that order.
    `dtypes`: safetensors dtypes besides floating point its parts may have (the packed bytes
    and exponents of MXFP4 experts are U8), which `build` turns into floats.
    `packing`: where the parts are a pre-quantized weight, its packed form (the parameter's
    SourceTensor then carries it as `packed`; `build` gives the dequantized values)."""

    parts: tuple[tuple[str, tuple[int, ...] | EitherShape], ...]
    build: Callable[[list[np.ndarray]], np.ndarray]
    dtypes: frozenset[str] = frozenset()
    packing: Packing | None = None

    def then(self, transform: Callable[[np.ndarray], np.ndarray]) -> Assembly:
        return Assembly(self.parts, lambda arrays: transform(self.build(arrays)), self.dtypes)

    @staticmethod
    def join(combine: Callable[..., np.ndarray], *assemblies: Assembly) -> Assembly:
        """One parameter from several assemblies' results: `combine(*results)`."""
        counts = [len(a.parts) for a in assemblies]

        def build(arrays: list[np.ndarray]) -> np.ndarray:
            bounds = list(itertools.accumulate(counts, initial=0))
            spans = zip(assemblies, bounds, bounds[1:], strict=False)
            return combine(*(a.build(arrays[lo:hi]) for a, lo, hi in spans))

        dtypes = frozenset().union(*(a.dtypes for a in assemblies))
        return Assembly(tuple(p for a in assemblies for p in a.parts), build, dtypes)


def bind(
    parameters: Iterable[ir.Value],
    checkpoint: Checkpoint,
    *,
    unused: Iterable[str] = (),
    prefix: str = "",
    assemblies: Mapping[str, Assembly] | None = None,
) -> None:
    """Attach each parameter's checkpoint tensor (or its `assemblies` recipe), strictly.

    A missing tensor, a shape mismatch or a checkpoint tensor that nothing uses
    (except the `unused` patterns a family declares) is an error naming it.
    `prefix` is a base-model prefix some checkpoints omit (GPT-2's `transformer.`).
    """
    used: set[str] = set()
    missing = []

    def find(name: str, shape: tuple[int, ...], dtypes=frozenset()) -> TensorRef | None:
        key = name
        ref = checkpoint.tensors.get(key)
        if ref is None and prefix and name.startswith(prefix):
            key = name[len(prefix) :]
            ref = checkpoint.tensors.get(key)
        if ref is None:
            missing.append(name)
            return None
        wanted = shape.shapes if isinstance(shape, EitherShape) else (shape,)
        if ref.shape not in wanted:
            expected = " or ".join(str(list(w)) for w in wanted)
            raise WeightsError(
                f"tensor '{ref.name}' has shape {list(ref.shape)}, the model expects {expected}"
            )
        if ref.dtype not in _FLOATS | dtypes:
            raise WeightsError(f"tensor '{ref.name}' is {ref.dtype}, expected floating point")
        used.add(key)
        return ref

    for param in parameters:
        assembly = (assemblies or {}).get(param.name)
        if assembly is None:
            ref = find(param.name, tuple(param.shape.dims))
            if ref is not None:
                param.const_value = _lazy_cast(ref, param.dtype)
            continue
        refs = [find(name, shape, assembly.dtypes) for name, shape in assembly.parts]
        if None not in refs:
            param.const_value = _assembled(param, assembly, refs)
    if missing:
        raise WeightsError(_listing("missing from the checkpoint", missing))
    patterns = [re.compile(p) for p in (*ALWAYS_UNUSED, *unused)]
    leftovers = [
        name
        for name in checkpoint.tensors
        if name not in used and not any(p.fullmatch(name) for p in patterns)
    ]
    if leftovers:
        raise WeightsError(_listing("in the checkpoint but unused by the model", leftovers))


def _assembled(param: ir.Value, assembly: Assembly, refs: list[TensorRef]) -> SourceTensor:
    shape = tuple(param.shape.dims)

    def build() -> np.ndarray:
        array = assembly.build([ref.load() for ref in refs])
        assert array.shape == shape, (param.name, array.shape, shape)
        return array

    packing = assembly.packing
    packed = None
    if packing is not None:
        packed = Packed(packing.info, lambda: packing.build([ref.load() for ref in refs]))
    return SourceTensor(build, param.dtype, shape, param.name, packed)


def _listing(what: str, names: list[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in sorted(names)[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"{len(names)} tensor(s) {what}: {shown}{more}"


def _lazy_cast(ref: TensorRef, dtype: ir.DataType) -> SourceTensor:
    packed = getattr(ref, "packed", None)  # a GGUF Q4_0 tensor's blocks
    if not hasattr(ref, "rows") or not ref.shape or math.prod(ref.shape) == 0:
        return SourceTensor(ref.load, dtype, ref.shape, ref.name, packed)  # (no bands)
    return SourceTensor.of_rows(ref.rows(), dtype, ref.name, packed=packed)


class SourceTensor(ir.LazyTensor):
    """A weight computed when written: `source()` gives the array still in the checkpoint's
    dtype; the cast to `dtype` happens last. Passes that transpose, concatenate or quantize
    compose on `source` so they touch the narrow checkpoint dtype, not a cast copy.
    `packed`: the weight's pre-quantized form (an Olive projection, a GGUF Q4_0 tensor), for
    the passes that bind it as it is. With `rows` (the same values, read by bands;
    `transposed`: their transpose) it is written a band at a time."""

    __slots__ = ("packed", "rows", "source", "transposed")

    def __init__(
        self,
        source,
        dtype: ir.DataType,
        shape,
        name: str,
        packed: Packed | None = None,
        rows=None,
        transposed=False,
    ):
        self.source, self.packed = source, packed
        self.rows, self.transposed = rows, transposed
        target = NUMPY_OF[dtype]

        def load() -> ir.Tensor:
            array = source()
            if array.dtype != target:
                array = array.astype(target)
            return ir.Tensor(array, dtype=dtype, name=name)

        super().__init__(load, dtype=dtype, shape=ir.Shape(shape), name=name)

    @classmethod
    def of_rows(
        cls, rows: Rows, dtype: ir.DataType, name: str, transposed=False, packed=None
    ) -> SourceTensor:
        """The tensor `rows` hold (their transpose with `transposed`), written by bands."""
        if transposed:
            whole = lambda: np.ascontiguousarray(rows.array().T)  # noqa: E731
            return cls(whole, dtype, rows.shape[::-1], name, packed, rows, transposed=True)
        return cls(rows.array, dtype, rows.shape, name, packed, rows)

    def tofile(self, file) -> None:
        if self.rows is None:
            super().tofile(file)
        else:
            write_rows(file, self.rows, NUMPY_OF[self.dtype], self.transposed)


def source_array(tensor: ir.TensorProtocol) -> np.ndarray:
    """A tensor's values, in the checkpoint dtype when it is a SourceTensor."""
    return tensor.source() if isinstance(tensor, SourceTensor) else tensor.numpy()


def source_rows(tensor: ir.TensorProtocol) -> Rows | np.ndarray:
    """A tensor's values read by bands where it can be (else its whole array)."""
    if isinstance(tensor, SourceTensor) and tensor.rows is not None and not tensor.transposed:
        return tensor.rows
    return source_array(tensor)

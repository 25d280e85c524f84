"""Open a GGUF file: its header checked against caps before the `gguf` package parses it, then
its metadata decoded to Python values and its tensors indexed (memory-mapped, not read)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from converter.errors import WeightsError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
# A DeepSeek-V3-sized GGUF has about 1,100 tensors and 50 metadata keys; a tokenizer's arrays
# are single keys however long.
MAX_TENSORS = 100_000
MAX_METADATA_KEYS = 10_000
MAX_DIMS = 4  # GGML_MAX_DIMS


@dataclass(frozen=True)
class GgufTensor:
    """One tensor as stored: its GGUF name, ggml type name, numpy shape ([rows, columns] for a
    matrix, the reverse of GGUF's dims) and raw data (a memory map: blocks for quant types)."""

    name: str
    type: str
    shape: tuple[int, ...]
    data: np.ndarray


@dataclass(frozen=True)
class GgufFile:
    path: Path
    metadata: dict[str, Any]  # key -> str, int, float, bool or list of them
    tensors: dict[str, GgufTensor]

    @property
    def architecture(self) -> str:
        arch = self.metadata.get("general.architecture")
        if not isinstance(arch, str):
            raise WeightsError(f"{self.path.name} has no general.architecture")
        return arch


def open_gguf(path: str | Path) -> GgufFile:
    """Read `path`'s metadata and tensor index; refuse what is not a GGUF file or is absurd."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"no such GGUF file: '{path}'")
    _check_header(path)
    from gguf import GGUFReader  # its import is slow; only GGUF builds pay it

    try:
        reader = GGUFReader(path)
        fields = reader.fields.items()
        metadata = {name: f.contents() for name, f in fields if not name.startswith("GGUF.")}
        tensors = {t.name: _tensor(t) for t in reader.tensors}
    except (ValueError, IndexError, KeyError, TypeError, OverflowError, UnicodeDecodeError) as err:
        raise WeightsError(f"{path.name} is a corrupt GGUF file ({err})") from None
    return GgufFile(path, metadata, tensors)


def _check_header(path: Path) -> None:
    with path.open("rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:4] != MAGIC:
        raise WeightsError(f"{path.name} is not a GGUF file (no GGUF magic)")
    version, tensors, keys = struct.unpack("<IQQ", head[4:])
    if version not in VERSIONS:
        raise WeightsError(f"{path.name}: GGUF version {version} is not supported (2 or 3)")
    if tensors > MAX_TENSORS:
        raise WeightsError(f"{path.name} declares {tensors:,} tensors (at most {MAX_TENSORS:,})")
    if keys > MAX_METADATA_KEYS:
        raise WeightsError(
            f"{path.name} declares {keys:,} metadata keys (at most {MAX_METADATA_KEYS:,})"
        )


def _tensor(t) -> GgufTensor:
    dims = [int(d) for d in t.shape]
    if len(dims) > MAX_DIMS or any(d <= 0 for d in dims):
        raise ValueError(f"tensor '{t.name}' has absurd dims {dims}")
    return GgufTensor(t.name, t.tensor_type.name, tuple(reversed(dims)), t.data)

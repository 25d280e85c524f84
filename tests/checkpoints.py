"""Safetensors files written by hand (8-byte little-endian header length, JSON header, data),
so tests can produce well-formed checkpoints and every kind of corrupt one."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

TINY_LLAMA = Path(__file__).resolve().parent.parent / "examples" / "tiny-llama"

DTYPE_NAMES: dict[np.dtype, str] = {
    np.dtype(np.float64): "F64",
    np.dtype(np.float32): "F32",
    np.dtype(np.float16): "F16",
    np.dtype(ml_dtypes.bfloat16): "BF16",
    np.dtype(np.int64): "I64",
    np.dtype(np.int32): "I32",
    np.dtype(np.int16): "I16",
    np.dtype(np.int8): "I8",
    np.dtype(np.uint8): "U8",
}
_NUMPY_OF = {name: dtype for dtype, name in DTYPE_NAMES.items()}


def write_raw(path: Path, header: dict[str, Any] | bytes, data: bytes = b"") -> Path:
    """Write a safetensors file from a header (dict, or raw bytes for corrupt ones) and data."""
    blob = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)
    return path


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> Path:
    """A well-formed safetensors file holding `tensors` in order."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": DTYPE_NAMES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    return write_raw(path, header, b"".join(chunks))


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """All tensors of a well-formed file, in header order (copies, not memory maps)."""
    blob = path.read_bytes()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + length])
    data = blob[8 + length :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        array = np.frombuffer(data[start:end], dtype=_NUMPY_OF[entry["dtype"]])
        tensors[name] = array.reshape(entry["shape"]).copy()
    return tensors


def copy_tiny_llama(folder: Path) -> Path:
    """A writable copy of examples/tiny-llama (config, bf16 weights, tokenizer) at `folder`."""
    shutil.copytree(TINY_LLAMA, folder)
    return folder


def edit_config(folder: Path, **changes: Any) -> None:
    """Set keys of `folder`/config.json; a value of `...` deletes the key."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is ...:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config))

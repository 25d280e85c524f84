"""build_gguf(): a GGUF file in, a ModelPackage out, through the same build as a folder.

The file's metadata becomes a config.json and its tokenizer the tokenizer files, written to a
staging folder that stands in for the source folder until the package is gone; its tensors
are read from the memory-mapped file while the package is written.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from pathlib import Path

from converter.build import build_source
from converter.config import GENERATION_CONFIG
from converter.execution_providers import execution_provider
from converter.gguf.config import hf_config
from converter.gguf.reader import open_gguf
from converter.gguf.tensors import gguf_checkpoint
from converter.gguf.tokenizer import tokenizer_files
from converter.lowering import Int4
from converter.package import ModelPackage
from converter.repo_files import CONFIG
from converter.source import Source
from converter.weights import safe_file_name


def build_gguf(
    path: str | Path,
    *,
    ep: str = "default",
    dtype: str = "f32",
    int4_block_size: int = 32,
    int4_head_bits: int | None = 8,
    release: bool = False,
) -> ModelPackage:
    """Convert a GGUF file (llama.cpp's format) into an ONNX package (not yet saved).

    `ep` and `dtype` as for `build()`. Quantized tensors are dequantized to float32 and cast
    to the build's dtype, except a Q4_0 tensor in an int4 build of block size 32: its blocks
    become the MatMulNBits (or DequantizeLinear) weights as they are, without requantizing.
    """
    execution_provider(ep, dtype)
    int4 = Int4(int4_block_size, True, int4_head_bits) if dtype == "int4" else None
    gguf = open_gguf(path)
    config = hf_config(gguf)
    checkpoint = gguf_checkpoint(gguf, config)
    folder = Path(tempfile.mkdtemp(prefix="mobius-gguf-"))
    try:
        _write_source_files(folder, config, gguf.metadata)
        source = Source(folder, None, None, file=gguf.path.resolve())
        package = build_source(source, checkpoint, ep=ep, dtype=dtype, int4=int4, release=release)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    weakref.finalize(package, shutil.rmtree, folder, ignore_errors=True)
    return package


def _write_source_files(folder: Path, config: dict, metadata: dict) -> None:
    (folder / CONFIG).write_text(json.dumps(config, indent=2))
    ids = {k: v for k, v in config.items() if k in ("bos_token_id", "eos_token_id")}
    if ids:
        (folder / GENERATION_CONFIG).write_text(json.dumps(ids, indent=2))
    for name, text in tokenizer_files(metadata).items():
        (folder / safe_file_name(name)).write_text(text)

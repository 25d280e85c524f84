"""A conversion job's peak memory, estimated at submission from what the queue knows then (the
bytes it downloads and the dtypes it builds), and the budgets workers take
(`mobius worker --max-memory 4GB`). How the constants were measured: docs/jobs.md.
"""

from __future__ import annotations

import re

from converter.errors import MobiusError

# A worker process that has converted and validated anything: Python, onnx, onnxruntime, torch,
# transformers (0.50 GB peak RSS for examples/tiny-llama, whose weights are 0.3 MB).
BASE_BYTES = 600 * 2**20
# Peak RSS beyond that per byte of the checkpoint, by the dtype built (the widest counts): while
# validating, transformers holds the model in f32 (2 bytes per byte of a 16-bit checkpoint; an
# f32 one is over-estimated) and onnxruntime the package. Measured (bench/job_memory.py) on a
# 0.39 GB bf16 checkpoint: 6.05 (f32), 5.54 (f16), 5.43 (int4); rounded up to the next half.
PER_CHECKPOINT_BYTE = {"f32": 6.5, "f16": 6.0, "bf16": 6.0, "int8": 6.0, "int4": 6.0}

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?", re.IGNORECASE)


def estimate_peak(checkpoint_bytes: int, dtypes: tuple[str, ...]) -> int:
    """Peak resident bytes of a job converting a checkpoint of `checkpoint_bytes` (weights and
    side files) to `dtypes`; variants are built one after another, so the widest one counts."""
    factor = max(PER_CHECKPOINT_BYTE[dtype] for dtype in dtypes)
    return BASE_BYTES + int(factor * checkpoint_bytes)


def parse_size(text: str) -> int:
    """`512MB`, `4GB`, `1.5 GiB`, `4G`, `2048` -> bytes: k/M/G/T are powers of 1000, with an
    `i` (KiB, GiB) powers of 1024."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise MobiusError(f"'{text}' is not a memory size (e.g. 512MB, 4GB, 1.5GiB)")
    number, unit, binary = match.groups()
    if binary and not unit:
        raise MobiusError(f"'{text}' is not a memory size (e.g. 512MB, 4GB, 1.5GiB)")
    scale = 1024 ** ("kmgt".index(unit.lower()) + 1) if binary else _UNITS[unit.lower()]
    size = int(float(number) * scale)
    if size <= 0:
        raise MobiusError(f"a memory size must be positive, not '{text}'")
    return size

"""Safetensors headers are capped across all shards and refused before they are parsed.

A header of a few hundred thousand zero-size entries (tens of MB) used to be parsed whole: about
a GB of memory per shard before anything was refused. The caps are counted on the raw bytes, a
chunk at a time, so refusing such a header takes memory that does not depend on its content.
"""

from __future__ import annotations

import json
import re
import struct
import tracemalloc
from pathlib import Path

import pytest

import converter.weights as weights
from converter.errors import WeightsError
from converter.weights import Checkpoint
from tests.checkpoints import copy_tiny_llama

# Each zero-size entry is 10 JSON items: 4 `:`, 4 `,` (one between entries), 2 `[`.
ENTRY = '"t{}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}'


def write_zero_size_entries(path: Path, count: int, first: int = 0) -> int:
    """A shard whose header lists `count` empty tensors; returns the header's size in bytes."""
    header = ("{" + ",".join(ENTRY.format(i) for i in range(first, first + count)) + "}").encode()
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
    return len(header)


def test_an_oversized_header_is_refused_without_parsing_it(tmp_path: Path) -> None:
    count = weights.MAX_HEADER_ITEMS // 10 + 1000  # just past the cap: about 28 MB of header
    size = write_zero_size_entries(tmp_path / "model.safetensors", count)
    tracemalloc.start()
    try:
        with pytest.raises(WeightsError) as refused:
            Checkpoint(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(refused.value)
    assert message.startswith("model.safetensors: ")
    assert f"more than {weights.MAX_HEADER_ITEMS:,} JSON items" in message
    # Parsing would have built hundreds of thousands of dicts (hundreds of MB); counting holds
    # one chunk of the file at a time.
    assert peak < 4 * weights._COUNT_CHUNK, (peak, size)


def test_the_item_cap_counts_every_shard(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(weights, "MAX_HEADER_ITEMS", 25_000)
    write_zero_size_entries(tmp_path / "model-00001-of-00002.safetensors", 2000)
    write_zero_size_entries(tmp_path / "model-00002-of-00002.safetensors", 2000, first=2000)
    # each shard alone is under the cap (about 20k items), both together are not
    with pytest.raises(WeightsError, match=r"^model-00002-of-00002\.safetensors: .* 25,000 JSON"):
        Checkpoint(tmp_path)


def test_the_byte_cap_counts_every_shard(tmp_path: Path, monkeypatch) -> None:
    size = write_zero_size_entries(tmp_path / "model-00001-of-00002.safetensors", 100)
    write_zero_size_entries(tmp_path / "model-00002-of-00002.safetensors", 100, first=100)
    monkeypatch.setattr(weights, "MAX_HEADER_BYTES", size + size // 2)
    message = rf"^model-00002-of-00002\.safetensors: .* exceed {size + size // 2:,} bytes"
    with pytest.raises(WeightsError, match=message):
        Checkpoint(tmp_path)


def test_a_real_checkpoint_is_far_inside_the_caps(tmp_path: Path) -> None:
    folder = copy_tiny_llama(tmp_path / "tiny")
    blob = (folder / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", blob[:8])
    header = blob[8 : 8 + length]
    tensors = len(json.loads(header)) - 1  # without __metadata__
    items = len(re.findall(rb"[,:\[]", header))
    assert len(Checkpoint(folder).tensors) == tensors
    assert items / tensors < 12  # the per-tensor cost the caps are sized with

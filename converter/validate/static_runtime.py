"""Run a static-cache package in its portable contract (write_indices) in onnxruntime: each
cache is allocated once at max_seq_len slots and bound as both its input and its updated
output, so TensorScatter writes the new keys and values into it in place."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnxruntime as ort

from converter.dtypes import ORT_NUMPY
from converter.errors import MobiusError
from converter.package import MANIFEST
from converter.tasks.text_generation import (
    KEY_CACHE,
    NONPAD_KV_SEQLEN,
    UPDATED_KEY_CACHE,
    UPDATED_VALUE_CACHE,
    VALUE_CACHE,
    WRITE_INDICES,
)
from converter.validate.runtime import decoder_vocab_size


class StaticDecoder:
    """Prefill right-padded rows, then one token per row per step, writing into the caches."""

    def __init__(
        self,
        package: Path,
        provider: str = "CPUExecutionProvider",
        options: ort.SessionOptions | None = None,
    ):
        manifest = json.loads((Path(package) / MANIFEST).read_text())
        [decoder] = [c for c in manifest["components"] if c["role"] == "decoder"]
        started = time.perf_counter()
        self.session = ort.InferenceSession(
            str(Path(package) / decoder["filename"]), options, providers=[provider]
        )
        self.load_seconds = time.perf_counter() - started
        self.max_seq_len = manifest["static_cache"]["max_seq_len"]
        inputs = {i.name: i for i in self.session.get_inputs()}
        layers = sum(1 for name in inputs if name.startswith(KEY_CACHE.split("%")[0]))
        self.caches = {  # input name -> (output name, its declared type and dims)
            past % i: (present % i, inputs[past % i])
            for i in range(layers)
            for past, present in (
                (KEY_CACHE, UPDATED_KEY_CACHE),
                (VALUE_CACHE, UPDATED_VALUE_CACHE),
            )
        }
        self.vocab_size = decoder_vocab_size(self.session)

    def run(self, ids: np.ndarray, mask: np.ndarray, steps: list[np.ndarray]) -> list[np.ndarray]:
        """Logits (float32) of the prefill and of each step's tokens [batch, 1] in `steps`;
        `mask` marks each row's prompt tokens, padding after them."""
        lengths = mask.sum(axis=1)
        if not (mask == (np.arange(mask.shape[1]) < lengths[:, None])).all():
            raise MobiusError("a static cache's prompt rows are right-padded: 1s, then 0s")
        calls = self._calls(ids, lengths)
        found = [next(calls)]
        found += [calls.send(step) for step in steps]
        return found

    def generate(self, ids: np.ndarray, lengths: np.ndarray, new_tokens: int) -> np.ndarray:
        """Greedy tokens [batch, new_tokens] after each row's prompt of `lengths[row]` tokens."""
        calls = self._calls(ids, np.asarray(lengths))
        logits = next(calls)
        last = np.asarray(lengths) - 1  # each row's last prompt token
        tokens = [logits[np.arange(len(ids)), last].argmax(-1)]
        for _ in range(new_tokens - 1):
            tokens.append(calls.send(tokens[-1][:, None])[:, -1].argmax(-1))
        return np.stack(tokens, axis=1)

    def greedy(self, ids: np.ndarray, new_tokens: int) -> tuple[list[int], float]:
        """Greedy tokens for batch row 0 after the prompt, and decode tokens per second."""
        started = time.perf_counter()
        tokens = self.generate(ids, np.full(len(ids), ids.shape[1]), new_tokens)
        elapsed = time.perf_counter() - started
        return tokens[0].tolist(), (new_tokens - 1) / elapsed if elapsed > 0 else float("inf")

    def _calls(self, ids: np.ndarray, lengths: np.ndarray) -> Iterator[np.ndarray]:
        """Yields each call's logits; is sent the next tokens [batch, 1]."""
        batch = ids.shape[0]
        binding = self.session.io_binding()
        binding.bind_output("logits")  # first: get_outputs()[0]
        for past, (present, meta) in self.caches.items():
            dims = [batch, *meta.shape[1:]]
            cache = ort.OrtValue.ortvalue_from_numpy(np.zeros(dims, ORT_NUMPY[meta.type]))
            binding.bind_ortvalue_input(past, cache)
            binding.bind_ortvalue_output(present, cache)  # the same buffer: updated in place
        written = np.zeros(batch, np.int64)  # each row's slots already holding its tokens
        tokens, new = ids, lengths.astype(np.int64)
        while True:
            sequence = tokens.shape[1]
            if (written + sequence > self.max_seq_len).any():
                raise MobiusError(f"the static cache holds {self.max_seq_len} tokens per row")
            feeds = {
                "input_ids": tokens.astype(np.int64),
                "position_ids": written[:, None] + np.arange(sequence),
                WRITE_INDICES: written,
                NONPAD_KV_SEQLEN: written + new,
            }
            for name, value in feeds.items():
                binding.bind_cpu_input(name, value)
            binding.bind_output("logits")  # a new one per call: its shape follows the tokens
            self.session.run_with_iobinding(binding)
            tokens = yield binding.get_outputs()[0].numpy().astype(np.float32)
            written, new = written + new, np.ones(batch, np.int64)

"""Run an encoder-decoder package in onnxruntime the way Optimum and Transformers.js do: the
encoder once, then the merged decoder with every past empty and use_cache_branch false, then
one token per step with the presents fed back as pasts and use_cache_branch true."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from converter.dtypes import ORT_NUMPY

PAST, PRESENT = "past_key_values.", "present."


class OnnxSeq2Seq:
    def __init__(self, package: Path, provider: str = "CPUExecutionProvider"):
        manifest = json.loads((Path(package) / "mobius.json").read_text())
        files = {c["role"]: c["filename"] for c in manifest["components"]}
        started = time.perf_counter()
        self.encoder, self.decoder = (
            ort.InferenceSession(str(Path(package) / files[role]), providers=[provider])
            for role in ("encoder", "decoder")
        )
        self.load_seconds = time.perf_counter() - started
        self.decoder_inputs = {i.name: i for i in self.decoder.get_inputs()}
        self.outputs = [o.name for o in self.decoder.get_outputs()]

    def encode(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """last_hidden_state of the encoder inputs in `feeds` (those its graph reads)."""
        names = {i.name for i in self.encoder.get_inputs()}
        return self.encoder.run(None, {k: v for k, v in feeds.items() if k in names})[0]

    def run(self, feeds: dict[str, np.ndarray], decoder_ids: np.ndarray, first: int):
        """Logits (float32) of the first `first` decoder tokens without a cache, then of each
        later token, one step at a time with the cache."""
        return list(self._calls(feeds, decoder_ids[:, :first], decoder_ids[:, first:].T))

    def greedy(
        self, feeds: dict[str, np.ndarray], start: int, new_tokens: int
    ) -> tuple[list[list[int]], float]:
        """Each row's greedy tokens after `start` (the decoder start token), and decode steps
        per second."""
        batch = next(iter(feeds.values())).shape[0]
        tokens: list[np.ndarray] = []
        calls = self._calls(feeds, np.full((batch, 1), start), tokens)
        started = time.perf_counter()
        for logits in calls:
            tokens.append(logits[:, -1].argmax(-1))
            if len(tokens) == new_tokens:
                break
        elapsed = time.perf_counter() - started
        speed = (new_tokens - 1) / elapsed if elapsed > 0 else float("inf")
        return np.stack(tokens, axis=1).tolist(), speed

    def _calls(self, feeds, ids, steps):
        hidden = self.encode(feeds)
        past = self._empty_past(ids.shape[0])
        fixed = {"encoder_hidden_states": hidden}
        if "encoder_attention_mask" in self.decoder_inputs:
            fixed["encoder_attention_mask"] = feeds["attention_mask"]
        cached, step = False, 0
        while True:
            use_cache = np.array([cached])
            run = {"input_ids": ids, "use_cache_branch": use_cache, **fixed, **past}
            logits, *presents = self.decoder.run(self.outputs, run)
            past = {
                name.replace(PRESENT, PAST, 1): value
                for name, value in zip(self.outputs[1:], presents, strict=True)
            }
            yield logits.astype(np.float32)
            if step >= len(steps):
                return
            ids, cached, step = np.reshape(steps[step], (-1, 1)), True, step + 1

    def _empty_past(self, batch: int) -> dict[str, np.ndarray]:
        """Every past with no positions: [batch, heads, 0, head_dim] from the graph's dims."""
        past = {}
        for name, meta in self.decoder_inputs.items():
            if name.startswith(PAST):
                dims = [batch, *(d if isinstance(d, int) else 0 for d in meta.shape[1:])]
                past[name] = np.zeros(dims, ORT_NUMPY[meta.type])
        return past

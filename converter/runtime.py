"""Run a text-generation package in onnxruntime the way a generator does."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from converter.package import MODEL_FILE

_NUMPY_OF = {"tensor(float)": np.float32, "tensor(float16)": np.float16}


class OnnxDecoder:
    """Prefill, then one token per step, feeding present.* back as past_key_values.*."""

    def __init__(self, package: Path, provider: str = "CPUExecutionProvider"):
        started = time.perf_counter()
        self.session = ort.InferenceSession(str(package / MODEL_FILE), providers=[provider])
        self.load_seconds = time.perf_counter() - started
        decoder = json.loads((package / "genai_config.json").read_text())["model"]["decoder"]
        self.layers = decoder["num_hidden_layers"]
        self.kv_heads = decoder["num_key_value_heads"]
        self.head_dim = decoder["head_size"]
        self.cache_dtype = _NUMPY_OF[self.session.get_inputs()[-1].type]
        self.present_names = [o.name for o in self.session.get_outputs()[1:]]

    def run(self, ids: np.ndarray, mask: np.ndarray, steps: list[np.ndarray]) -> list[np.ndarray]:
        """Logits (float32) of the prefill and of each step token in `steps`."""
        return list(self._calls(ids, mask, steps))

    def greedy(self, ids: np.ndarray, new_tokens: int) -> tuple[list[int], float]:
        """Greedy tokens for batch row 0 after the prompt, and decode tokens per second."""
        tokens: list[int] = []
        calls = self._calls(ids, np.ones_like(ids), tokens, feed_back=True)
        logits = next(calls)
        started = time.perf_counter()
        for _ in range(new_tokens):
            tokens.append(int(logits[0, -1].argmax()))
            if len(tokens) == new_tokens:
                break
            logits = next(calls)
        elapsed = time.perf_counter() - started
        return tokens, (new_tokens - 1) / elapsed if elapsed > 0 else float("inf")

    def _calls(self, ids, mask, steps, feed_back: bool = False):
        batch = ids.shape[0]
        empty = np.zeros((batch, self.kv_heads, 0, self.head_dim), self.cache_dtype)
        names = [f"past_key_values.{i}.{kv}" for i in range(self.layers) for kv in ("key", "value")]
        past = dict.fromkeys(names, empty)
        position = np.clip(mask.cumsum(-1) - 1, 0, None)
        token, step = ids, 0
        while True:
            feeds = {"input_ids": token, "attention_mask": mask, "position_ids": position, **past}
            logits, *presents = self.session.run(None, feeds)
            past = {
                n.replace("present", "past_key_values"): v
                for n, v in zip(self.present_names, presents, strict=True)
            }
            yield logits.astype(np.float32)
            if step >= len(steps):
                return
            token = np.full((batch, 1), steps[step]) if feed_back else steps[step]
            step += 1
            mask = np.concatenate([mask, np.ones((batch, 1), mask.dtype)], axis=1)
            position = position[:, -1:] + 1

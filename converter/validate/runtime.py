"""Run a text-generation package in onnxruntime the way a generator does, reading what to feed
from its genai_config.json (file, input/output names) and its graph (cache shapes, dtype)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnx_ir as ir
import onnxruntime as ort

from converter.dtypes import ORT_NUMPY
from converter.package import GENAI_CONFIG

FLOAT8 = "tensor(float8e4m3fn)"


class OnnxDecoder:
    """Prefill, then one token per step, feeding each present back as the next past."""

    def __init__(
        self,
        package: Path,
        provider: str = "CPUExecutionProvider",
        options: ort.SessionOptions | None = None,
    ):
        decoder = json.loads((Path(package) / GENAI_CONFIG).read_text())["model"]["decoder"]
        started = time.perf_counter()
        self.session = ort.InferenceSession(
            str(Path(package) / decoder["filename"]), options, providers=[provider]
        )
        self.load_seconds = time.perf_counter() - started
        inputs, outputs = decoder["inputs"], decoder["outputs"]
        self.logits = outputs["logits"]
        self.vocab_size = decoder_vocab_size(self.session)
        layers = decoder["num_hidden_layers"]
        pairs = [
            (inputs["past_key_names"] % i, outputs["present_key_names"] % i) for i in range(layers)
        ]
        pairs += [
            (inputs["past_value_names"] % i, outputs["present_value_names"] % i)
            for i in range(layers)
        ]
        self.present_to_past = {present: past for past, present in pairs}
        self.past = {i.name: i for i in self.session.get_inputs() if i.name in dict(pairs)}
        self.outputs = [self.logits, *self.present_to_past]
        positions = next(i for i in self.session.get_inputs() if i.name == "position_ids")
        self.mrope = len(positions.shape) == 3  # [3, batch, sequence]: the rows agree for text

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

    def empty_past(self, batch: int) -> dict[str, np.ndarray]:
        """Each past input with no tokens yet: [batch, heads, 0, size] from the graph's dims."""
        past = {}
        for name, meta in self.past.items():
            dims = [batch, *(d if isinstance(d, int) else 0 for d in meta.shape[1:])]
            past[name] = _feedable(np.zeros(dims, ORT_NUMPY[meta.type]), meta.type)
        return past

    def _calls(self, ids, mask, steps, feed_back: bool = False):
        batch = ids.shape[0]
        past = self.empty_past(batch)
        position = np.clip(mask.cumsum(-1) - 1, 0, None)
        token, step = ids, 0
        while True:
            positions = np.stack([position] * 3) if self.mrope else position
            feeds = {"input_ids": token, "attention_mask": mask, "position_ids": positions, **past}
            logits, *presents = self.session.run(self.outputs, feeds)
            names = [self.present_to_past[name] for name in self.outputs[1:]]
            past = {
                name: _feedable(value, self.past[name].type)
                for name, value in zip(names, presents, strict=True)
            }
            yield logits.astype(np.float32)
            if step >= len(steps):
                return
            token = np.full((batch, 1), steps[step]) if feed_back else steps[step]
            step += 1
            mask = np.concatenate([mask, np.ones((batch, 1), mask.dtype)], axis=1)
            position = position[:, -1:] + 1


def _feedable(array: np.ndarray, ort_type: str):
    """`array` as onnxruntime takes it for an input of `ort_type`: a float8 cache (which
    onnxruntime hands out as its bytes, uint8) only as an OrtValue of that type."""
    if ort_type != FLOAT8:
        return array
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array, ir.DataType.FLOAT8E4M3FN)


def decoder_vocab_size(session: ort.InferenceSession) -> int:
    """The width of a decoder's logits, as its graph declares them."""
    return next(o for o in session.get_outputs() if o.name == "logits").shape[-1]


class OnnxEncoder:
    """A saved encoder package as a reference: each component's graph run on the same feeds."""

    def __init__(self, package: Path, provider: str = "CPUExecutionProvider"):
        manifest = json.loads((Path(package) / "mobius.json").read_text())
        self.sessions = {
            c["role"]: ort.InferenceSession(
                str(Path(package) / c["filename"]), providers=[provider]
            )
            for c in manifest["components"]
        }

    def outputs(self, role: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        session = self.sessions[role]
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(None, feeds), strict=True))

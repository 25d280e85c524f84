"""Run a vision-language package in onnxruntime the way onnxruntime-genai runs one: the vision
graph once per prompt, the embedding graph on every call (no image features after the prompt),
the decoder with its cache fed back. The components come from mobius.json; the names are the
image-text-to-text task's."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from converter.dtypes import ORT_NUMPY
from converter.validate.mrope import mrope_positions, xdrope_positions

PAST = "past_key_values."


class OnnxVisionLanguage:
    def __init__(self, package: Path, provider: str = "CPUExecutionProvider"):
        started = time.perf_counter()
        manifest = json.loads((Path(package) / "mobius.json").read_text())
        self.config = json.loads((Path(package) / "config.json").read_text())
        files = {c["role"]: c["filename"] for c in manifest["components"]}

        def session(role: str) -> ort.InferenceSession:
            return ort.InferenceSession(str(Path(package) / files[role]), providers=[provider])

        self.vision, self.embedding, self.decoder = map(session, ("vision", "embedding", "decoder"))
        self.past = {i.name: i for i in self.decoder.get_inputs() if i.name.startswith(PAST)}
        self.outputs = [o.name for o in self.decoder.get_outputs()]
        positions = next(i for i in self.decoder.get_inputs() if i.name == "position_ids")
        self.mrope = len(positions.shape) == 3
        self.position_rule = manifest.get("position_rule", "mrope")
        self.position_rows = positions.shape[0] if self.mrope else 1
        # a decoder whose mask reads the ids (Gemma 3's image blocks) gets them too, as genai
        # feeds a decoder that declares them
        self.decoder_ids = any(i.name == "input_ids" for i in self.decoder.get_inputs())
        features = next(i for i in self.embedding.get_inputs() if i.name == "image_features")
        self.features_type, self.hidden = ORT_NUMPY[features.type], features.shape[-1]
        self.load_seconds = time.perf_counter() - started

    def image_features(self, image: dict[str, np.ndarray]) -> np.ndarray:
        return self.vision.run(["image_features"], image)[0]

    def inputs_embeds(self, image: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
        """The prompt's embeddings with `image`'s features merged in (float32)."""
        return self.embed(ids, self.image_features(image)).astype(np.float32)

    def embed(self, ids: np.ndarray, features: np.ndarray | None) -> np.ndarray:
        if features is None:
            features = np.zeros((0, self.hidden), self.features_type)
        return self.embedding.run(
            ["inputs_embeds"], {"input_ids": ids, "image_features": features}
        )[0]

    def run(
        self,
        image: dict[str, np.ndarray],
        ids: np.ndarray,
        steps: list[np.ndarray],
        positions: np.ndarray | None = None,
    ) -> list[np.ndarray]:
        """Logits (float32) of the prompt `ids` with `image`, then of each step's tokens.
        `positions`: the prompt's position_ids (default: 0, 1, ...; for mrope, Qwen-VL's 3-D
        positions from the image grids, as onnxruntime-genai computes them); each step
        continues one past the largest."""
        decoding = self._decode(image, ids, positions)
        results = [next(decoding)]
        results += [decoding.send(tokens) for tokens in steps]
        return results

    def _decode(self, image, ids: np.ndarray, positions: np.ndarray | None):
        """A generator: the prompt's logits first, then those of each token batch sent."""
        batch = ids.shape[0]
        if positions is None:
            positions = self.positions(image, ids)
        mask = np.ones_like(ids)
        past = {
            name: np.zeros(
                [batch, *(d if isinstance(d, int) else 0 for d in meta.shape[1:])],
                ORT_NUMPY[meta.type],
            )
            for name, meta in self.past.items()
        }
        tokens, embeds = ids, self.embed(ids, self.image_features(image))
        next_position = positions.max(axis=-1, keepdims=True) + 1
        while True:
            feeds = {
                "inputs_embeds": embeds,
                "attention_mask": mask,
                "position_ids": np.ascontiguousarray(positions),
                **past,
            }
            if self.decoder_ids:
                feeds["input_ids"] = tokens
            logits, *presents = self.decoder.run(self.outputs, feeds)
            named = zip(self.outputs[1:], presents, strict=True)
            past = {name.replace("present.", PAST): value for name, value in named}
            tokens = yield logits.astype(np.float32)
            embeds = self.embed(tokens, None)
            mask = np.concatenate([mask, np.ones((batch, 1), mask.dtype)], axis=1)
            positions, next_position = next_position, next_position + 1

    def positions(self, image: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
        if not self.mrope:
            return np.broadcast_to(np.arange(ids.shape[1]), ids.shape)
        merge = self.config["vision_config"]["spatial_merge_size"]
        grids, image_token = image["image_grid_thw"], self.config["image_token_id"]
        if self.position_rule == "xdrope":
            return xdrope_positions(ids, grids, image_token, merge, self.position_rows)
        return mrope_positions(ids, grids, image_token, merge)

    def greedy(
        self,
        image: dict[str, np.ndarray],
        ids: np.ndarray,
        new_tokens: int,
        positions: np.ndarray | None = None,
    ) -> tuple[list[int], float]:
        """Greedy tokens after the prompt (batch row 0), and the decode speed in tokens/s
        (the prompt, the image's included, not counted)."""
        decoding = self._decode(image, ids, positions)
        tokens = [int(next(decoding)[0, -1].argmax())]
        started = time.perf_counter()
        while len(tokens) < new_tokens:
            logits = decoding.send(np.array([[tokens[-1]]], dtype=np.int64))
            tokens.append(int(logits[0, -1].argmax()))
        elapsed = time.perf_counter() - started
        return tokens, (new_tokens - 1) / elapsed if elapsed > 0 else float("inf")

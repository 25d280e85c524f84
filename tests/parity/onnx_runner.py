"""Run a converted text-generation package in onnxruntime the way a generator would."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort


class OnnxDecoder:
    def __init__(self, package: Path):
        self.session = ort.InferenceSession(
            str(package / "model.onnx"), providers=["CPUExecutionProvider"]
        )
        decoder = json.loads((package / "genai_config.json").read_text())["model"]["decoder"]
        self.layers = decoder["num_hidden_layers"]
        self.kv_heads = decoder["num_key_value_heads"]
        self.head_dim = decoder["head_size"]

    def generate_steps(self, ids: np.ndarray, mask: np.ndarray, steps: list[np.ndarray]):
        """Prefill then decode each of `steps`, feeding present.* back as past_key_values.*."""
        batch = ids.shape[0]
        empty = np.zeros((batch, self.kv_heads, 0, self.head_dim), np.float32)
        names = [f"past_key_values.{i}.{kv}" for i in range(self.layers) for kv in ("key", "value")]
        past = dict.fromkeys(names, empty)
        position = np.clip(mask.cumsum(-1) - 1, 0, None)
        outputs = []
        for step, token in enumerate([ids, *steps]):
            if step:
                mask = np.concatenate([mask, np.ones((batch, 1), mask.dtype)], axis=1)
                position = position[:, -1:] + 1
            feeds = {
                "input_ids": token,
                "attention_mask": mask,
                "position_ids": position,
                **past,
            }
            logits, *presents = self.session.run(None, feeds)
            outputs_names = [o.name for o in self.session.get_outputs()[1:]]
            past = {
                n.replace("present", "past_key_values"): v
                for n, v in zip(outputs_names, presents, strict=True)
            }
            outputs.append(logits)
        return outputs

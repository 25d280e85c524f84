"""Qwen-VL's 3-D positions of a prompt, as onnxruntime-genai and transformers compute them:
text tokens advance all three rows together; an image's tokens (one per merge block) take
(frame, row, column) of their block, offset by the position the image starts at; the text
after an image continues one past the image's largest position."""

from __future__ import annotations

import numpy as np


def mrope_positions(ids: np.ndarray, grids: np.ndarray, image_token: int, merge: int) -> np.ndarray:
    """[3, batch, sequence] positions of `ids` [batch, sequence] whose image tokens belong, in
    order, to the images of `grids` [num_images, 3] (frames, rows, columns of patches)."""
    out = np.zeros((3, *ids.shape), dtype=np.int64)
    image = 0
    for b, row in enumerate(ids):
        i, start = 0, 0
        while i < len(row):
            if row[i] != image_token:
                out[:, b, i] = start
                start, i = start + 1, i + 1
                continue
            t, h, w = (int(v) for v in grids[image])
            image += 1
            frames, rows, cols = np.meshgrid(
                np.arange(t), np.arange(h // merge), np.arange(w // merge), indexing="ij"
            )
            block = np.stack([frames.ravel(), rows.ravel(), cols.ravel()]) + start
            out[:, b, i : i + block.shape[1]] = block
            i += block.shape[1]
            start = int(block.max()) + 1
    return out

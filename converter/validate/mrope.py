"""Qwen-VL's 3-D positions of a prompt, as onnxruntime-genai and transformers compute them:
text tokens advance all three rows together; an image's tokens (one per merge block) take
(frame, row, column) of their block, offset by the position the image starts at; the text
after an image continues one past the image's largest position. HunYuanVL's XD-RoPE positions
(`xdrope_positions`, as transformers computes them) keep every token's place in the sequence."""

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


def xdrope_positions(
    ids: np.ndarray, grids: np.ndarray, image_token: int, merge: int, rows: int
) -> np.ndarray:
    """HunYuanVL's XD-RoPE positions [rows, batch, sequence]: every token's place in the
    sequence on every row, except an image's grid tokens (a run of image tokens holds its
    begin, rows x (columns + 1) grid tokens, its end), whose last three rows are their column,
    row and the image's index."""
    out = np.broadcast_to(np.arange(ids.shape[1]), (rows, *ids.shape)).copy()
    image = 0
    for b, row in enumerate(ids):
        i = 0
        while i < len(row):
            if row[i] != image_token:
                i += 1
                continue
            end = i
            while end < len(row) and row[end] == image_token:
                end += 1
            _, h, w = (int(v) for v in grids[image])
            grid_rows, grid_cols = np.meshgrid(
                np.arange(h // merge), np.arange(w // merge + 1), indexing="ij"
            )
            count = grid_rows.size
            start = i + 1 if end - i == count + 2 else i
            out[-3, b, start : start + count] = grid_cols.ravel()
            out[-2, b, start : start + count] = grid_rows.ravel()
            out[-1, b, start : start + count] = image
            image, i = image + 1, end
    return out

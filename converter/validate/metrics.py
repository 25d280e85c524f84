"""How far a candidate's logits are from a reference's: the numbers validation reports and
the parity tests assert, computed in one place."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Metrics:
    max_abs_diff: float
    min_cosine: float  # the worst row's cosine similarity
    top1_agreement: float  # share of rows whose argmax agrees


def compare(expected: np.ndarray, actual: np.ndarray, mask: np.ndarray | None = None) -> Metrics:
    """Logits [..., vocab] against logits of the same shape; `mask` (the shape without the
    vocab axis) keeps only the rows that count, e.g. not the padding of a left-padded batch."""
    if expected.shape != actual.shape:
        raise ValueError(f"shapes differ: expected {expected.shape}, got {actual.shape}")
    e = expected.astype(np.float64).reshape(-1, expected.shape[-1])
    a = actual.astype(np.float64).reshape(-1, actual.shape[-1])
    if mask is not None:
        keep = np.broadcast_to(mask.astype(bool), expected.shape[:-1]).reshape(-1)
        e, a = e[keep], a[keep]
    norms = np.linalg.norm(e, axis=1) * np.linalg.norm(a, axis=1)
    return Metrics(
        max_abs_diff=float(np.abs(e - a).max()),
        min_cosine=float(((e * a).sum(axis=1) / np.maximum(norms, 1e-30)).min()),
        top1_agreement=float((e.argmax(axis=1) == a.argmax(axis=1)).mean()),
    )


def leading_matches(a: list[int], b: list[int]) -> int:
    """How many tokens two greedy sequences share before they first differ."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count

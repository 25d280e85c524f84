"""Check the static-cache feature on every decoder parity case (a few minutes of CPU).

PYTHONPATH=. python scripts/static_cache_sweep.py default   # or cpu; case ids after it: those

For each case's tiny random checkpoint: a static-cache build (max_seq_len 32), then a batch of
two right-padded prompts (7 and 4 tokens) and 6 steps teacher-forced on transformers' greedy
tokens; one line per case: OK or MISMATCH with the largest logit difference from transformers
over the whole sequence, or REFUSED with the reason. tests/test_static_cache.py holds the
fast subset; this is the breadth (docs/build-features.md quotes its figures).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from converter import build
from converter.errors import ConfigError
from converter.tasks import TextGenerationTask
from converter.validate.runtime import OnnxDecoder
from converter.validate.static_runtime import StaticDecoder
from tests.parity.cases import CASES, is_base
from tests.parity.reference import make_checkpoint

PROMPTS = np.random.default_rng(7).integers(3, 100, size=(2, 7))
LENGTHS = np.array([7, 4])
STEPS = 6


def worst_difference(model, package: Path) -> float:
    runner = OnnxDecoder if (package / "genai_config.json").is_file() else StaticDecoder
    decoder = runner(package)
    mask = (np.arange(PROMPTS.shape[1]) < LENGTHS[:, None]).astype(np.int64)
    worst = 0.0
    for row, length in enumerate(LENGTHS):
        sequence = torch.tensor(PROMPTS[row : row + 1, :length])
        with torch.no_grad():
            for _ in range(STEPS):
                token = model(sequence).logits[0, -1].argmax().reshape(1, 1)
                sequence = torch.cat([sequence, token], dim=1)
            expected = model(sequence).logits[0].numpy()
        tokens = sequence[0, length:].numpy()
        steps = [np.full((2, 1), t) for t in tokens[:-1]]
        rows = [row, 1 - row]  # the row under test first, beside the other
        found = decoder.run(PROMPTS[rows], mask[rows], steps)
        actual = [found[0][0, length - 1], *(step[0, -1] for step in found[1:])]
        worst = max(
            worst, *(np.abs(a - expected[length - 1 + i]).max() for i, a in enumerate(actual))
        )
    return worst


def main(ep: str, cases: list[str]) -> None:
    task = TextGenerationTask(static_cache=True, max_seq_len=32)
    for case in cases:
        folder = Path(tempfile.mkdtemp(prefix="static-sweep-"))
        try:
            model = make_checkpoint(case, folder / "hf", max_position_embeddings=64)
            package = build(str(folder / "hf"), ep=ep, task=task, progress=False)
            package.save(folder / "onnx", progress=False)
            worst = worst_difference(model, folder / "onnx")
            print(case, "OK" if worst < 1e-3 else "MISMATCH", f"{worst:.2e}", flush=True)
        except ConfigError as err:
            print(case, "REFUSED", err, flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or [case for case in CASES if is_base(case)])

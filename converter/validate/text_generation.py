"""The text-generation probe: a fixed prompt, prefill and greedy decode steps, compared with a
reference teacher-forced on the reference's greedy tokens (every position sees the same
context); greedy decoding is compared free-running."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from converter.features import PRUNE_PREFILL
from converter.package import GENAI_CONFIG, MANIFEST
from converter.validate.metrics import compare, leading_matches
from converter.validate.report import ValidationReport
from converter.validate.runtime import OnnxDecoder
from converter.validate.static_runtime import StaticDecoder

PROMPT_LENGTH = 16
# onnxruntime-genai's tokenizer reads both (measured with 0.18: either missing fails to load).
GENAI_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def missing_files(package: Path) -> list[str]:
    """What onnxruntime-genai needs besides the graph, as failures (none for a package it does
    not run: a static cache in its portable contract)."""
    missing = [name for name in GENAI_TOKENIZER_FILES if not (package / name).is_file()]
    if not missing or not (package / GENAI_CONFIG).is_file():
        return []
    return [
        f"no tokenizer: onnxruntime-genai cannot run this package without {' and '.join(missing)}"
        " (copy them from the model's repo into the package)"
    ]


def probe(package: Path, provider: str, reference, report: ValidationReport, steps: int) -> None:
    """Run the package against `reference` (anything with `run` and `greedy`), recording the
    figures in `report`."""
    runtime = OnnxDecoder if (package / GENAI_CONFIG).is_file() else StaticDecoder
    candidate = runtime(package, provider)
    prompt = np.random.default_rng(0).integers(0, candidate.vocab_size, size=(1, PROMPT_LENGTH))
    expected_tokens, _ = reference.greedy(prompt, steps)
    forced = [np.array([[t]], dtype=np.int64) for t in expected_tokens[:-1]]
    expected = last_prefill_position(package, reference.run(prompt, np.ones_like(prompt), forced))
    actual = candidate.run(prompt, np.ones_like(prompt), forced)
    tokens, report.tokens_per_second = candidate.greedy(prompt, steps)
    report.load_seconds = candidate.load_seconds
    report.record(compare(np.concatenate(expected, axis=1), np.concatenate(actual, axis=1)))
    report.greedy_match = leading_matches(tokens, expected_tokens) / steps


def last_prefill_position(package: Path, logits: list[np.ndarray]) -> list[np.ndarray]:
    """The reference's logits as the package gives them: the prefill's last position alone
    where it was built with prune-prefill-prefix."""
    if PRUNE_PREFILL not in json.loads((package / MANIFEST).read_text()).get("features", []):
        return logits
    return [logits[0][:, -1:], *logits[1:]]

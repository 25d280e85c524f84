"""The encoder-decoder probe: a fixed batch of two sources (the second padded, made from the
encoder graph's own input names like the encoder probe's), greedy decoding from the decoder
start token on the reference, then the package teacher-forced on the reference's tokens (a
first step without a cache, then one token per cached step) and compared; greedy decoding is
compared free-running on the first row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from converter.config import GENERATION_CONFIG
from converter.validate.encoding import probe_inputs
from converter.validate.metrics import compare, leading_matches
from converter.validate.report import ValidationReport
from converter.validate.seq2seq_runtime import OnnxSeq2Seq


def missing_files(package: Path) -> list[str]:
    return []


def probe(package: Path, provider: str, reference, report: ValidationReport, steps: int) -> None:
    """Run the package against `reference` (anything with `run` and `greedy` as OnnxSeq2Seq
    has them), recording the figures in `report`."""
    candidate = OnnxSeq2Seq(package, provider)
    config = json.loads((package / "config.json").read_text())
    feeds = probe_inputs(candidate.encoder, config)
    start = decoder_start(package, config)
    expected_tokens, _ = reference.greedy(feeds, start, steps)
    batch = len(expected_tokens)
    forced = np.concatenate(
        [np.full((batch, 1), start), np.array(expected_tokens)[:, :-1]], axis=1
    ).astype(np.int64)
    expected = np.concatenate(reference.run(feeds, forced, 1), axis=1)
    actual = np.concatenate(candidate.run(feeds, forced, 1), axis=1)
    tokens, report.tokens_per_second = candidate.greedy(feeds, start, steps)
    report.load_seconds = candidate.load_seconds
    report.record(compare(expected, actual))
    report.greedy_match = leading_matches(tokens[0], expected_tokens[0]) / steps


def decoder_start(package: Path, config: dict) -> int:
    """The first decoder token generation uses: generation_config.json's, else config.json's
    decoder_start_token_id, else its eos_token_id (mBART's shift_tokens_right)."""
    path = package / GENERATION_CONFIG
    generation = json.loads(path.read_text()) if path.is_file() else {}
    for source, key in (
        (generation, "decoder_start_token_id"),
        (config, "decoder_start_token_id"),
        (config, "eos_token_id"),
    ):
        value = source.get(key) if isinstance(source, dict) else None
        if isinstance(value, list):
            value = value[0] if value else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise ValueError("the package's config names no decoder_start_token_id")

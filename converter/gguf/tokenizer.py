"""Placeholder until the GGUF tokenizer conversion lands: no tokenizer files."""

from __future__ import annotations

from typing import Any


def tokenizer_files(metadata: dict[str, Any]) -> dict[str, str]:
    """File name -> text (tokenizer.json, tokenizer_config.json) from a GGUF's metadata."""
    return {}

"""Which files of a model repo mobius reads, by name, and how a Hub repo id looks."""

from __future__ import annotations

import re

from converter.errors import SourceError

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
SENTENCE_TRANSFORMERS = "modules.json"
# Top-level files besides the weights, by exact name: transformers' names for the tokenizer,
# processor and generation files. A repo's other files (READMEs, pickles, ONNX...) stay out.
SIDE_FILES = (
    CONFIG,
    INDEX,
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "spiece.model",  # sentencepiece: T5, ALBERT, XLNet
    "sentencepiece.bpe.model",  # sentencepiece: XLM-R, mBART
    "generation_config.json",
    "chat_template.jinja",
    "chat_template.json",
    "preprocessor_config.json",
    "processor_config.json",
    SENTENCE_TRANSFORMERS,
)
# What a package carries from the source: everything besides the config, the index and the
# sentence-transformers module list (read only to know the repo is one: its modules' folders
# stay in the source repo).
RUNTIME_FILES = tuple(n for n in SIDE_FILES if n not in (CONFIG, INDEX, SENTENCE_TRANSFORMERS))
# Gemma 3's tokenizer.json, the largest of these seen on the Hub, is about 33 MB.
MAX_SIDE_FILE_BYTES = 64 * 1024 * 1024
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
_REPO_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def fetch_plan(files: list[tuple[str, int | None]]) -> list[str]:
    """The files besides the weights that a Hub download fetches, sorted.

    `files` are a repo's (name, size in bytes) pairs; the plan is every top-level one named in
    SIDE_FILES. A planned file over MAX_SIDE_FILE_BYTES, or of unknown size (None), is a
    SourceError naming it. Pure: the job queue counts exactly these against its limits.
    """
    plan = []
    for name, size in files:
        if name not in SIDE_FILES:
            continue
        if size is None:
            raise SourceError(f"'{name}' has no size on the Hub; refusing to download it")
        if size > MAX_SIDE_FILE_BYTES:
            raise SourceError(
                f"'{name}' is {size:,} bytes, over the {MAX_SIDE_FILE_BYTES:,}-byte limit for "
                "files besides the weights"
            )
        plan.append(name)
    return sorted(plan)


def is_repo_id(model: str, *, namespaced: bool = False) -> bool:
    """`name` or `namespace/name` (`namespaced`: only the latter) with the Hub's characters:
    no `..`, `--`, or more slashes."""
    parts = model.split("/")
    return (
        len(model) <= 96
        and (2 if namespaced else 1) <= len(parts) <= 2
        and all(_REPO_PART.fullmatch(p) and ".." not in p and "--" not in p for p in parts)
    )

"""Where a model comes from: a local folder, or a Hub repo downloaded (safetensors only)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from converter.errors import SourceError

INDEX = "model.safetensors.index.json"
# Top-level files besides the weights; a repo's other files (READMEs, pickles, ONNX...) stay out.
SIDE_FILES = (
    "config.json",
    INDEX,
    "tokenizer*",
    "special_tokens_map.json",
    "generation_config.json",
    "chat_template.jinja",
    "chat_template.json",
    "vocab.json",
    "merges.txt",
    "*.model",  # sentencepiece
    "added_tokens.json",
)
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")
_REPO_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


@dataclass(frozen=True)
class Source:
    path: Path  # local folder holding config.json + *.safetensors (+ index, tokenizer files...)
    repo_id: str | None  # Hub repo id, None when the user gave a local folder
    revision: str | None  # resolved commit sha for Hub sources, None for local


def resolve_source(
    model: str, revision: str | None = None, token: str | None = None, progress: bool = True
) -> Source:
    """A local folder as is, or a Hub repo (`namespace/name`) downloaded to the Hugging Face cache.

    Hub downloads are pinned to the commit sha the revision resolves to and fetch only config,
    safetensors weights and tokenizer/generation files. `token=None` uses `HF_TOKEN` (or the
    stored login); `HF_ENDPOINT` and `HF_HOME` are honored.
    """
    if not model.strip():
        raise SourceError("model '' is empty: give a local folder or a Hub repo id")
    folder = Path(model).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise SourceError(f"local folder '{folder}' has no config.json")
        if revision is not None:
            raise SourceError(
                f"revision '{revision}' applies to Hub repos, not to folder '{folder}'"
            )
        return Source(folder.resolve(), None, None)
    if _looks_like_path(model):
        raise SourceError(f"no such folder: '{model}'")
    if not _is_repo_id(model):
        raise SourceError(
            f"'{model}' is neither a local folder nor a valid Hub repo id (namespace/name)"
        )
    from converter.hub import download  # the Hub client loads only for Hub ids

    return download(model, revision, token, progress)


def _looks_like_path(model: str) -> bool:
    return (
        model.startswith((".", "/", "~"))
        or "\\" in model
        or model.count("/") >= 2
        or (os.sep != "/" and os.sep in model)
        or bool(re.match(r"[A-Za-z]:", model))
    )


def _is_repo_id(model: str) -> bool:
    parts = model.split("/")
    return (
        len(model) <= 96
        and 1 <= len(parts) <= 2
        and all(_REPO_PART.fullmatch(p) and ".." not in p and "--" not in p for p in parts)
    )

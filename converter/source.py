"""Where a model comes from: a local folder, or a Hub repo downloaded (safetensors only)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from converter.errors import SourceError

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
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
)
# What a package carries from the source: everything besides the config and the index.
RUNTIME_FILES = tuple(name for name in SIDE_FILES if name not in (CONFIG, INDEX))
# Gemma 3's tokenizer.json, the largest of these seen on the Hub, is about 33 MB.
MAX_SIDE_FILE_BYTES = 64 * 1024 * 1024
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")
_REPO_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


@dataclass(frozen=True)
class Source:
    path: Path  # local folder holding config.json + *.safetensors (+ index, tokenizer files...)
    repo_id: str | None  # Hub repo id, None when the user gave a local folder
    revision: str | None  # resolved commit sha for Hub sources, None for local


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
        _refuse_links_out(folder.resolve())
        return Source(folder.resolve(), None, None)
    if _looks_like_path(model):
        raise SourceError(f"no such folder: '{model}'")
    if not _is_repo_id(model):
        raise SourceError(
            f"'{model}' is neither a local folder nor a valid Hub repo id (namespace/name)"
        )
    from converter.hub import download  # the Hub client loads only for Hub ids

    return download(model, revision, token, progress)


def _refuse_links_out(folder: Path) -> None:
    """Refuse a file the conversion reads that is a symlink leading out of `folder`.

    In a Hugging Face cache snapshot (`models--org--name/snapshots/<sha>`) every file links
    into the repo's `blobs/`, so there the repo's cache folder is the boundary.
    """
    cached = folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--")
    boundary = folder.parent.parent if cached else folder
    for path in folder.iterdir():
        read = path.name in SIDE_FILES or path.name.endswith(".safetensors")
        if read and path.is_symlink() and not path.resolve().is_relative_to(boundary):
            raise SourceError(
                f"'{path.name}' in '{folder}' is a symlink to '{path.resolve()}', outside the "
                "model folder; copy the file in instead"
            )


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

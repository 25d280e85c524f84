"""Where a model comes from: a local folder, or a Hub repo downloaded (safetensors only)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from converter.errors import SourceError
from converter.repo_files import CONFIG, SIDE_FILES, is_repo_id


@dataclass(frozen=True)
class Source:
    path: Path  # local folder holding config.json + *.safetensors (+ index, tokenizer files...)
    repo_id: str | None  # Hub repo id, None when the user gave a local folder
    revision: str | None  # resolved commit sha for Hub sources, None for local
    file: Path | None = None  # the single file `path` was made from (a GGUF file), if any


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
        if not (folder / CONFIG).is_file():
            raise SourceError(f"local folder '{folder}' has no config.json")
        if revision is not None:
            raise SourceError(
                f"revision '{revision}' applies to Hub repos, not to folder '{folder}'"
            )
        _refuse_links_out(folder.resolve())
        return Source(folder.resolve(), None, None)
    if _looks_like_path(model):
        raise SourceError(f"no such folder: '{model}'")
    if not is_repo_id(model):
        raise SourceError(
            f"'{model}' is neither a local folder nor a valid Hub repo id (namespace/name)"
        )
    from converter.hub import download  # the Hub client loads only for Hub ids

    path, sha = download(model, revision, token, progress)
    return Source(path, model, sha)


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

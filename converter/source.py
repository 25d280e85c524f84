"""Where a model comes from: a local folder, or a Hub repo downloaded (safetensors only)."""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    FileMetadataError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import tqdm as hf_tqdm

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


class _QuietTqdm(hf_tqdm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "disable": True})


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
    api = HfApi(token=token)
    try:
        return _download(api, model, revision, token, progress)
    except SourceError:
        raise
    except GatedRepoError as err:  # before RepositoryNotFoundError, its base class
        raise SourceError(
            f"'{model}' is gated: accept its terms on the Hub and set HF_TOKEN"
        ) from err
    except RepositoryNotFoundError as err:
        raise SourceError(
            f"model repo '{model}' not found on {api.endpoint} "
            "(check the id, or set HF_TOKEN for a private repo)"
        ) from err
    except RevisionNotFoundError as err:
        raise SourceError(
            f"revision '{revision or 'main'}' not found in model repo '{model}'"
        ) from err
    except RemoteEntryNotFoundError as err:
        raise SourceError(
            f"a file of '{model}' vanished from {api.endpoint} during download"
        ) from err
    except HfHubHTTPError as err:
        status = err.response.status_code
        hint = " (the Hub rejected the token)" if status == 401 else ""
        raise SourceError(f"{api.endpoint} answered HTTP {status} for '{model}'{hint}") from err
    except (httpx2.TransportError, OfflineModeIsEnabled, LocalEntryNotFoundError) as err:
        raise SourceError(f"cannot reach the Hub at {api.endpoint} to fetch '{model}'") from err
    except FileMetadataError as err:
        raise SourceError(f"{api.endpoint} does not answer like a Hugging Face Hub") from err


def _download(
    api: HfApi, repo_id: str, revision: str | None, token: str | None, progress: bool
) -> Source:
    info = api.model_info(repo_id, revision=revision)
    sha = info.sha
    if sha is None:
        raise SourceError(f"{api.endpoint} gave no commit sha for '{repo_id}'")
    files = [s.rfilename for s in info.siblings or []]
    top = [f for f in files if "/" not in f and "\\" not in f]
    if "config.json" not in top:
        raise SourceError(f"model repo '{repo_id}' has no config.json at {sha}")
    quiet: dict[str, Any] = {} if progress else {"tqdm_class": _QuietTqdm}
    weights = _weights(repo_id, sha, files, top, token, quiet)
    side = [f for f in top if any(fnmatch.fnmatchcase(f, p) for p in SIDE_FILES)]
    path = snapshot_download(
        repo_id, revision=sha, token=token, allow_patterns=sorted({*side, *weights}), **quiet
    )
    return Source(Path(path), repo_id, sha)


def _weights(
    repo_id: str,
    sha: str,
    files: list[str],
    top: list[str],
    token: str | None,
    quiet: dict[str, Any],
) -> list[str]:
    """The safetensors files to fetch: the shards the index names, else all top-level ones.

    Repos that carry a sharded checkpoint plus a duplicate (e.g. `consolidated.safetensors`)
    would otherwise be downloaded twice.
    """
    found = [f for f in top if f.endswith(".safetensors")]
    if not found:
        pickles = [f for f in files if f.endswith(PICKLE_SUFFIXES)]
        if pickles:
            raise SourceError(
                f"model repo '{repo_id}' has only PyTorch pickle weights "
                f"({', '.join(pickles[:3])}) "
                "and no .safetensors: mobius loads safetensors only and never unpickles"
            )
        raise SourceError(f"model repo '{repo_id}' has no .safetensors weights at {sha}")
    if INDEX not in top:
        return found
    index_path = hf_hub_download(repo_id, INDEX, revision=sha, token=token, **quiet)
    try:
        shards = set(json.loads(Path(index_path).read_text())["weight_map"].values())
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise SourceError(f"{INDEX} of '{repo_id}' is malformed (no weight_map)") from err
    if not shards:
        raise SourceError(f"{INDEX} of '{repo_id}' lists no weight files")
    missing = sorted(str(s) for s in shards if s not in found)
    if missing:
        raise SourceError(f"{INDEX} of '{repo_id}' names files not in the repo: {missing[:3]}")
    return sorted(shards)


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

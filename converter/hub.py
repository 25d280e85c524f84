"""Downloading a Hub repo: config, safetensors weights and tokenizer files, pinned to a sha."""

from __future__ import annotations

import json
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

from converter import hub_retry
from converter.errors import SourceError
from converter.repo_files import CONFIG, INDEX, PICKLE_SUFFIXES, fetch_plan


class _QuietTqdm(hf_tqdm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "disable": True})


def download(
    model: str, revision: str | None, token: str | None, progress: bool
) -> tuple[Path, str]:
    """The snapshot folder and the commit sha it is pinned to, retried as a whole on transient
    failures (`converter.hub_retry`; files already fetched stay in the cache). Each Hub failure
    becomes one SourceError line; the token never appears in it."""
    api = HfApi(token=token)
    try:
        return hub_retry.call("download", lambda: _download(api, model, revision, token, progress))
    except SourceError:
        raise
    except hub_retry.HubUnavailable as err:
        raise SourceError(f"cannot fetch '{model}' from {api.endpoint}: {err}") from err
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
    except OfflineModeIsEnabled as err:  # before any request: the client knows it is offline
        raise SourceError(
            f"offline mode is on (HF_HUB_OFFLINE=1), so '{model}' cannot be fetched from the "
            "Hub: unset HF_HUB_OFFLINE to download it, or give a local folder that holds it"
        ) from err
    except (httpx2.TransportError, LocalEntryNotFoundError) as err:
        raise SourceError(f"cannot reach the Hub at {api.endpoint} to fetch '{model}'") from err
    except FileMetadataError as err:
        raise SourceError(f"{api.endpoint} does not answer like a Hugging Face Hub") from err


def _download(
    api: HfApi, repo_id: str, revision: str | None, token: str | None, progress: bool
) -> tuple[Path, str]:
    info = api.model_info(repo_id, revision=revision, files_metadata=True)
    sha = info.sha
    if sha is None:
        raise SourceError(f"{api.endpoint} gave no commit sha for '{repo_id}'")
    siblings = info.siblings or []
    files = [s.rfilename for s in siblings]
    top = [f for f in files if "/" not in f and "\\" not in f]
    if CONFIG not in top:
        raise SourceError(f"model repo '{repo_id}' has no config.json at {sha}")
    side = fetch_plan([(s.rfilename, s.size) for s in siblings])
    quiet: dict[str, Any] = {} if progress else {"tqdm_class": _QuietTqdm}
    weights = _weights(repo_id, sha, files, top, token, quiet)
    path = snapshot_download(
        repo_id, revision=sha, token=token, allow_patterns=sorted({*side, *weights}), **quiet
    )
    return Path(path), sha


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

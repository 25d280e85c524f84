"""What a request must pass before it is queued, and what the queue learns from the Hub then.

- The requester may read the source: the Hub is asked *as the requester* (`read_as`), so a
  private repo the requester cannot see is "not found", exactly as on the Hub. An export that
  goes to the requester (a repo, a download) of a gated source also needs them to pass its gate;
  a pull request on the gated repo stays behind the gate and needs nothing more.
- From the front doors (Space, bot) only reviewed revisions are converted: a branch, a tag, or a
  full commit sha that is in a branch's history. `refs/pr/*` (an unmerged pull request, which
  anyone may open) is refused. The CLI builds any revision; its card names the exact ref.
- The commit sha the revision resolves to, the bytes that will be downloaded (weights and the
  side files `converter.source.fetch_plan` names, each capped), and whether the source is
  private or gated (then its exports are private too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import httpx2
from huggingface_hub import HfApi
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from converter.errors import MobiusError, SourceError
from converter.repo_files import fetch_plan
from pipeline.request import ConversionRequest

ReadAs = str | bool | None
"""Whose access to the source is checked: a requester's own Hub token (str); `False`, anonymous
(public repos only: anyone may ask); `None`, the service's token, for a requester a front door
vouches for (someone who mentioned the bot in a private repo's discussion is a member of it)."""

FULL_SHA = re.compile(r"[0-9a-f]{40}")
PR_REF = re.compile(r"refs/pr/\d+")


class JobRefused(MobiusError):
    """A request was refused at submission (over a limit, unknown model...); nothing was queued."""


@dataclass(frozen=True)
class Checkpoint:
    """What submission learns about a source: weights size, the commit sha it resolves to, and
    whether it is private or gated (its exports must not be public)."""

    size: int
    revision: str | None  # None for local folders
    private: bool = False


def probe_checkpoint(request: ConversionRequest, read_as: ReadAs = False) -> Checkpoint:
    """Check the source as `read_as` sees it (see `ReadAs`) and measure it; nothing is
    downloaded. A local folder (origin "cli" only) is measured on disk."""
    folder = Path(request.source).expanduser()
    if request.origin == "cli" and folder.is_dir():
        return Checkpoint(sum(f.stat().st_size for f in folder.glob("*.safetensors")), None)
    source, revision = request.source, request.revision
    api = HfApi(token=read_as)
    try:
        if revision is not None and request.origin != "cli":
            check_reviewed(api, source, revision)
        info = api.model_info(source, revision=revision, files_metadata=True)
        if info.gated and request.publish != "pr":
            api.auth_check(source)  # the export goes to the requester: they must pass the gate
    except RevisionNotFoundError as err:
        raise JobRefused(f"revision '{revision}' not found in model repo '{source}'") from err
    except GatedRepoError as err:  # before RepositoryNotFoundError, its base class
        raise JobRefused(
            f"'{source}' is gated: its export goes to you, so sign in and accept its terms on "
            "the Hub first (a pull request on the model itself stays behind its gate)"
        ) from err
    except RepositoryNotFoundError as err:
        raise JobRefused(_not_found(source, read_as)) from err
    except (HfHubHTTPError, httpx2.TransportError, OfflineModeIsEnabled) as err:
        raise JobRefused(f"cannot check '{source}' on the Hub right now; try again") from err
    siblings = {s.rfilename: s.size for s in info.siblings or []}
    try:
        side = fetch_plan(list(siblings.items()))
    except SourceError as err:
        raise JobRefused(f"'{source}': {err}") from err
    weights = [name for name in siblings if _is_top_level_weights(name)]
    size = sum(siblings[name] or 0 for name in [*weights, *side])
    return Checkpoint(size, info.sha, bool(info.private or info.gated))


def check_reviewed(api: HfApi, repo_id: str, revision: str) -> None:
    """A branch, a tag, or a full commit sha reachable from a branch; else JobRefused."""
    if PR_REF.fullmatch(revision) or revision.startswith("refs/pr/"):
        raise JobRefused(
            f"'{revision}' is a pull request of '{repo_id}', which anyone may open and nobody "
            "has reviewed: only branches, tags and commits on a branch are converted here "
            "(convert it once it is merged, or with the `mobius` CLI yourself)"
        )
    refs = api.list_repo_refs(repo_id)
    if revision in {ref.name for ref in [*refs.branches, *refs.tags]}:
        return
    if FULL_SHA.fullmatch(revision):
        for branch in refs.branches:
            history = api.list_repo_commits(repo_id, revision=branch.name)
            if any(commit.commit_id == revision for commit in history):
                return
        raise JobRefused(
            f"commit {revision} is not on any branch of '{repo_id}': only branches, tags and "
            "commits on a branch are converted here"
        )
    raise JobRefused(
        f"'{revision}' is neither a branch, a tag nor a full commit sha of '{repo_id}' "
        f"(branches: {', '.join(sorted(b.name for b in refs.branches)[:5]) or 'none'})"
    )


def _not_found(source: str, read_as: ReadAs) -> str:
    if read_as is False:
        return (
            f"model repo '{source}' not found (check the id); a private repo is converted only "
            "for someone who can read it: sign in, or ask from the repo's own discussions"
        )
    return f"model repo '{source}' not found, or you cannot read it (check the id)"


def _is_top_level_weights(name: str) -> bool:
    return "/" not in name and name.endswith(".safetensors")

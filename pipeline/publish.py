"""Deliver converted packages to the Hub: a pull request on the source repo, or a repo of its own.

Layout: each variant under `onnx/<ep>-<dtype>/`; the card at `onnx/README.md` in a PR (the
source README stays as it is) or at `README.md` in a `{namespace}/{name}-ONNX` repo; the
Transformers.js files of the portable variants (`onnx/model*.onnx`, and in repo mode
`config.json` and the tokenizer at the root) beside them. Everything
goes in one commit, which the Hub applies atomically: a failure leaves no PR and no half-filled
repo behind (a repo this call created is deleted again), and raises `PublishError`.

Retries (`converter.hub_retry`): the look-ups (existing PRs, repos, manifests), the preupload
with the LFS uploads, and the commit are each retried on transient failures. Before the commit
is sent again, the Hub is asked whether the last one landed although its answer was lost (the
PR with this request's marker is open; the export repo's head moved to a commit carrying the
marker): then it is not sent twice.

Where a repo-mode export goes (`destination`): `{namespace}/{name}-ONNX`, unless that repo
exists and is not an export of this very source (its variant manifests name another source, or
it is no mobius export at all); then `{namespace}/{source namespace}-{name}-ONNX`, then the same
with a short hash of the source id. The choice is deterministic and explained in
`Destination.note`, which the card and the replies show. An export never overwrites the export of
a different source: ownership is checked again just before the commit. The export of a private
or gated source is created private, whatever was asked.

Dedupe: a PR by the same bot user whose hidden marker names the same source revision and covers
the requested variants answers the request: an open one is returned instead of a new one, a
closed or merged one means "already handled" unless `force`. `already_published` checks before
converting; `publish` checks again before uploading and just before the commit. In repo mode,
a repo whose variant manifests already name the source revision needs no new conversion.

Tokens: calls authenticate with the given token only; no message this module writes holds it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from converter import hub_retry
from converter.errors import MobiusError
from converter.hub_retry import TOKEN_LIKE
from converter.repo_files import CONFIG, RUNTIME_FILES
from model_cards import card_path
from model_cards.layout import hub_paths
from pipeline.request import PUBLISH as MODES
from pipeline.request import Publish as Mode

FOLDER = re.compile(r"onnx/[A-Za-z0-9][A-Za-z0-9._-]*")
JS_MODEL = re.compile(r"onnx/model(_[a-z0-9]+)?\.onnx(_data)?")  # Transformers.js' file names
MANIFEST = re.compile(r"onnx/[^/]+/mobius\.json")
MARKER = re.compile(r"<!-- mobius: (\{.*?\}) -->")
PLAIN_BUILD = {"features": [], "release": False}  # a build without features or --release


class PublishError(MobiusError):
    """Publishing failed and left nothing on the Hub; the message never holds a token."""


@dataclass(frozen=True)
class PublishTarget:
    """Where to publish: "pr" on the source repo, "repo" `{namespace}/{name}-ONNX` (namespace
    defaults to the token's user), or "none". `force` opens a new PR even when a closed or
    merged one already handled the same revision."""

    mode: Mode
    namespace: str | None = None
    private: bool = False
    force: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"publish mode must be one of {', '.join(MODES)}, not {self.mode!r}")


@dataclass(frozen=True)
class Published:
    """The outcome. `reused`: nothing was committed because the Hub already had the result.

    `outcome`: "opened" (new PR), "existing" (an open PR covers it), "closed" / "merged" (a PR
    for this revision was closed or merged before; `force` opens a new one), "created" /
    "updated" / "unchanged" (repo mode), "skipped" (mode "none").
    """

    url: str
    mode: str
    reused: bool
    outcome: str = "opened"

    def describe(self) -> str:
        """One line for people."""
        return {
            "opened": f"opened pull request {self.url}",
            "existing": f"an open pull request already has these variants: {self.url}",
            "closed": f"a pull request for this revision was closed: {self.url} "
            "(not reopened; force to open a new one)",
            "merged": f"a pull request for this revision was merged: {self.url} "
            "(force to open a new one)",
            "created": f"created {self.url}",
            "updated": f"updated {self.url}",
            "unchanged": f"{self.url} already holds these files; nothing to commit",
            "skipped": "not published",
        }[self.outcome]


@dataclass(frozen=True)
class ExistingPR:
    url: str
    num: int
    status: str  # "open" | "draft" | "closed" | "merged"

    @property
    def is_open(self) -> bool:
        return self.status in ("open", "draft")


def built_with(options: dict[str, Any]) -> dict[str, Any]:
    """The build features and --release of a package's mobius.json or a request's
    `build_options()`: what an export must match to answer a request."""
    return {
        "features": sorted(options.get("features", [])),
        "release": bool(options.get("release", False)),
    }


def pr_marker(source_sha: str, variants: list[str], built: dict = PLAIN_BUILD) -> str:
    """The hidden, machine-readable line a PR description carries for dedupe (`built`, the
    `built_with` options, only where they are not plain)."""
    data: dict[str, Any] = {"revision": source_sha, "variants": sorted(variants)}
    if built != PLAIN_BUILD:
        data["build"] = built
    return f"<!-- mobius: {json.dumps(data, sort_keys=True)} -->"


def find_existing_pr(
    api: HfApi,
    repo_id: str,
    source_sha: str,
    variants: list[str],
    bot_user: str,
    built: dict = PLAIN_BUILD,
) -> ExistingPR | None:
    """The PR by `bot_user` on `repo_id` made from `source_sha` that covers `variants`, built
    with `built`: an open one if any, else the newest closed or merged one, else None."""
    handled: ExistingPR | None = None
    wanted = set(variants)
    for pr in api.get_repo_discussions(repo_id, author=bot_user, discussion_type="pull_request"):
        if pr.author != bot_user:
            continue
        details = api.get_discussion_details(repo_id, pr.num)
        opening = next((e for e in details.events if e.type == "comment"), None)
        marker = MARKER.search(getattr(opening, "content", "") or "")
        if marker is None:
            continue
        try:
            data = json.loads(marker[1])
        except ValueError:
            continue
        if data.get("revision") != source_sha or not wanted <= set(data.get("variants", [])):
            continue
        if data.get("build", PLAIN_BUILD) != built:
            continue
        found = ExistingPR(pr.url, pr.num, pr.status)
        if found.is_open:
            return found
        handled = handled or found  # discussions come newest first
    return handled


@dataclass(frozen=True)
class Destination:
    """Where a request's export goes, resolved once before converting (see the module doc).

    `repo_id`: the source repo (PR mode) or the export repo (repo mode); `private`: create the
    export repo private; `note`: why the repo name is not the first choice ("" when it is)."""

    target: PublishTarget
    repo_id: str
    private: bool = False
    note: str = ""

    @property
    def mode(self) -> Mode:
        return self.target.mode


def destination(source_repo_id: str, target: PublishTarget, token: str | None) -> Destination:
    """Resolve `target` for `source_repo_id`: the PR's repo, or the export repo's name and
    visibility (private when asked, or when the source is private or gated)."""
    if target.mode == "none":
        return Destination(target, "")
    if target.mode == "pr":
        return Destination(target, source_repo_id)
    api = _api(token)

    def resolve() -> Destination:
        writable = writable_namespaces(token)
        namespace = target.namespace or api.whoami()["name"]
        if namespace not in writable:
            raise PublishError(
                f"the token cannot create repos in '{namespace}' "
                f"(it can in: {', '.join(writable) or 'none, it is read-only'})"
            )
        info = api.model_info(source_repo_id)
        private = target.private or bool(info.private or info.gated)
        repo_id, note = _free_repo(api, source_repo_id, namespace)
        return Destination(target, repo_id, private, note)

    with _reported("repo", f"{api.endpoint}/{source_repo_id}", token):
        return hub_retry.call("look-up", resolve)


def writable_namespaces(token: str | None) -> list[str]:
    """The namespaces `token` may create repos in: its user and the orgs it may write to (a
    read-only token: none). For refusing a target before converting, not after."""
    me = _api(token).whoami()
    if (me.get("auth", {}).get("accessToken") or {}).get("role") == "read":
        return []
    orgs = [o["name"] for o in me.get("orgs") or [] if o.get("roleInOrg", "write") != "read"]
    return [me["name"], *orgs]


def _free_repo(api: HfApi, source_repo_id: str, namespace: str) -> tuple[str, str]:
    """The first candidate name that is missing, empty, or holds this source's export."""
    taken = []
    for repo_id in _candidates(source_repo_id, namespace):
        owner = _export_source(api, repo_id)
        if owner in (None, source_repo_id):
            if not taken:
                return repo_id, ""
            return repo_id, (
                f"`{taken[0][0]}` already holds {taken[0][1]}, so this export is published as "
                f"`{repo_id}`"
            )
        taken.append((repo_id, _owned_by(owner)))
    names = ", ".join(name for name, _ in taken)
    raise PublishError(f"no free repo name for the export of {source_repo_id}: {names} are taken")


def _candidates(source_repo_id: str, namespace: str) -> list[str]:
    owner, _, name = source_repo_id.rpartition("/")
    digest = hashlib.sha256(source_repo_id.encode()).hexdigest()[:8]
    names = [f"{name}-ONNX", f"{owner}-{name}-ONNX" if owner else "", f"{name}-ONNX-{digest}"]
    return [f"{namespace}/{_fit(n, digest)}" for n in dict.fromkeys(n for n in names if n)]


def _fit(name: str, digest: str, limit: int = 96) -> str:
    """The Hub caps repo names at 96 characters: shorten, keeping it distinct by the digest."""
    return name if len(name) <= limit else f"{name[: limit - 14]}-{digest}-ONNX"


def _owned_by(owner: str | None) -> str:
    return f"the export of `{owner}`" if owner else "files that are not a mobius export"


def _export_source(api: HfApi, repo_id: str) -> str | None:
    """None: `repo_id` does not exist or is empty (free to use); else the source repo its
    variant manifests name, or "" when they name no single source (another repo's files)."""
    try:
        files = api.list_repo_files(repo_id)
    except RepositoryNotFoundError:
        return None
    if set(files) <= {".gitattributes"}:
        return None
    manifests = [f for f in files if MANIFEST.fullmatch(f)]
    sources = set()
    for path in manifests:
        manifest = json.loads(Path(api.hf_hub_download(repo_id, path)).read_text())
        sources.add((manifest.get("source") or {}).get("repo_id"))
    return sources.pop() if len(sources) == 1 and None not in sources else ""


def already_published(
    source_repo_id: str,
    source_sha: str,
    variants: list[str],
    where: Destination,
    token: str,
    built: dict = PLAIN_BUILD,
) -> Published | None:
    """What answers this request before converting, or None when a conversion is needed.

    PR mode: an earlier PR (see `find_existing_pr`). Repo mode: the export repo already holds
    every variant folder built from `source_sha` with `built` (unless `force`).
    """
    if where.mode == "none":
        return None
    api = _api(token)

    def look_up() -> Published | None:
        if where.mode == "pr":
            user = api.whoami()["name"]
            existing = find_existing_pr(api, source_repo_id, source_sha, variants, user, built)
            return _answer(existing, where.target.force)
        if where.target.force or not _holds(
            api, where.repo_id, source_repo_id, source_sha, variants, built
        ):
            return None
        return Published(f"{api.endpoint}/{where.repo_id}", "repo", True, "unchanged")

    with _reported(where.mode, f"{api.endpoint}/{source_repo_id}", token):
        return hub_retry.call("look-up", look_up)


def publish(
    source_repo_id: str,
    source_sha: str,
    package_dirs: dict[str, Path],
    card_text: str,
    pr_title: str,
    pr_description: str,
    where: Destination,
    token: str,
    layout_files: dict[str, Path] | None = None,
) -> Published:
    """Publish `package_dirs` ({"onnx/<ep>-<dtype>": local package folder}) built from
    `source_repo_id` at `source_sha`, with the card and `layout_files` ({Hub path: local file},
    the Transformers.js layout), in one commit to `where` (see the module doc)."""
    if where.mode == "none":
        return Published("", "none", False, "skipped")
    api = _api(token)
    layout_files = layout_files or {}
    with _reported(where.mode, f"{api.endpoint}/{source_repo_id}", token):
        built = _check_packages(source_repo_id, source_sha, package_dirs)
        marker = pr_marker(source_sha, list(package_dirs), built)
        description = f"{pr_description.rstrip()}\n\n{marker}\n"
        _check_layout(layout_files, where.mode)
        card_file = card_path(where.mode)
        operations = _operations(package_dirs, layout_files, card_text, card_file, where.mode)
        if where.mode == "pr":
            hub_retry.call(
                "look-up", lambda: _refuse_overwrites(api, source_repo_id, source_sha, operations)
            )
        change = _Change(operations, pr_title, description, sorted(package_dirs), marker, built)
        if where.mode == "pr":
            user = hub_retry.call("look-up", lambda: api.whoami()["name"])
            return _publish_pr(api, source_repo_id, source_sha, change, where.target.force, user)
        with _reported(where.mode, f"{api.endpoint}/{where.repo_id}", token):
            return _publish_repo(api, source_repo_id, where, change)


def _api(token: str) -> HfApi:
    if not token:
        raise PublishError("publishing needs a Hub token (none was given)")
    return HfApi(token=token)


@contextmanager
def _reported(mode: str, where: str, token: str) -> Iterator[None]:
    """Every failure inside becomes one clear PublishError without the token (or its cause)."""
    try:
        yield
    except PublishError as err:
        raise PublishError(_scrub(str(err), token)) from None
    except Exception as err:
        raise PublishError(_scrub(_explain(err, mode, where), token)) from None


@dataclass(frozen=True)
class _Change:
    """The one commit: files (packages + card), title, description with marker, variants."""

    operations: list[CommitOperationAdd]
    title: str
    description: str
    variants: list[str]
    marker: str
    built: dict


def _publish_pr(
    api: HfApi, repo_id: str, sha: str, change: _Change, force: bool, user: str
) -> Published:
    def existing() -> ExistingPR | None:
        return find_existing_pr(api, repo_id, sha, change.variants, user, change.built)

    answer = _answer(hub_retry.call("look-up", existing), force)
    if answer is not None:
        return answer
    _upload(api, repo_id, change, create_pr=True)
    # another worker may have opened the same PR while the files were uploading
    answer = _answer(hub_retry.call("look-up", existing), force)
    if answer is not None:
        return answer

    def opened() -> Published | None:
        mine = existing()
        return Published(mine.url, "pr", False, "opened") if mine and mine.is_open else None

    def commit() -> Published:
        info = api.create_commit(
            repo_id,
            change.operations,
            commit_message=change.title,
            commit_description=change.description,
            create_pr=True,
            parent_commit=sha,
        )
        return Published(str(info.pr_url), "pr", False, "opened")

    return hub_retry.call("commit", commit, landed=opened)


def _publish_repo(
    api: HfApi, source_repo_id: str, where: Destination, change: _Change
) -> Published:
    repo_id, private = where.repo_id, where.private
    url = f"{api.endpoint}/{repo_id}"

    def found() -> tuple[bool, bool]:
        exists = api.repo_exists(repo_id)
        return exists, exists and bool(api.model_info(repo_id).private)

    existed, was_private = hub_retry.call("look-up", found)
    if existed and private and not was_private:
        raise PublishError(f"{url} exists and is public; this export must be private")
    try:
        api.create_repo(repo_id, private=private, exist_ok=existed)
    except HfHubHTTPError as err:
        if err.response.status_code != 409:
            raise
        existed = True  # someone created it meanwhile: it is not ours to delete
    # again: the conversion took a while
    owner = hub_retry.call("look-up", lambda: _export_source(api, repo_id))
    if owner not in (None, source_repo_id):
        raise PublishError(
            f"{url} now holds {_owned_by(owner)}; the export of {source_repo_id} was not "
            "published there (try again)"
        )
    try:
        head = hub_retry.call("look-up", lambda: api.model_info(repo_id).sha)
        _upload(api, repo_id, change, create_pr=False)
        new_head = _commit_to_repo(api, repo_id, head, change)
    except Exception as err:
        if not existed:
            try:
                hub_retry.call("clean-up", lambda: api.delete_repo(repo_id, missing_ok=True))
            except Exception as cleanup:
                raise PublishError(
                    f"{_explain(err, 'repo', url)}; the new repo could not be deleted again "
                    f"({type(cleanup).__name__}), remove it by hand"
                ) from None
        raise
    if not existed:
        return Published(url, "repo", False, "created")
    changed = new_head != head
    return Published(url, "repo", not changed, "updated" if changed else "unchanged")


def _commit_to_repo(api: HfApi, repo_id: str, head: str | None, change: _Change) -> str:
    """Commit `change` on top of `head`; the new head's sha."""

    def landed() -> str | None:
        now = api.model_info(repo_id).sha
        if now == head:
            return None
        latest = next(iter(api.list_repo_commits(repo_id)))
        return now if latest.commit_id == now and change.marker in latest.message else None

    def commit() -> str:
        return api.create_commit(
            repo_id,
            change.operations,
            commit_message=change.title,
            commit_description=change.description,
            parent_commit=head,
        ).oid

    return hub_retry.call("commit", commit, landed=landed)


def _upload(api: HfApi, repo_id: str, change: _Change, create_pr: bool) -> None:
    """The preupload (which files go to LFS) and the LFS uploads, retried together: files
    already uploaded are not sent again."""
    hub_retry.call(
        _upload_step,
        lambda: api.preupload_lfs_files(
            repo_id, additions=change.operations, create_pr=create_pr, free_memory=False
        ),
    )


def _upload_step(err: BaseException) -> str:
    """Which part of `_upload` failed: the preupload call, or the LFS batch, PUT or verify."""
    return "preupload" if "/preupload/" in hub_retry.failed_url(err) else "LFS upload"


def _answer(existing: ExistingPR | None, force: bool) -> Published | None:
    if existing is None or (not existing.is_open and force):
        return None
    return Published(existing.url, "pr", True, "existing" if existing.is_open else existing.status)


def _holds(
    api: HfApi, repo_id: str, source_repo_id: str, sha: str, variants: list[str], built: dict
) -> bool:
    """Whether `repo_id` has every variant folder with a manifest of `source_repo_id@sha`
    built with `built`."""
    for folder in variants:
        try:
            manifest = Path(api.hf_hub_download(repo_id, f"{folder}/mobius.json"))
        except (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError):
            return False
        manifest = json.loads(manifest.read_text())
        source = manifest.get("source", {})
        if (source.get("repo_id"), source.get("revision")) != (source_repo_id, sha):
            return False
        if built_with(manifest) != built:
            return False
    return True


def _check_packages(repo_id: str, sha: str, package_dirs: dict[str, Path]) -> dict:
    """Every folder is `onnx/<name>` and holds a package built from `repo_id` at `sha`, all
    with the same build options: those (`built_with`) are returned."""
    if not package_dirs:
        raise PublishError("nothing to publish: no packages were given")
    builds = set()
    for folder, local in package_dirs.items():
        if not FOLDER.fullmatch(folder):
            raise PublishError(f"hub folder {folder!r} is not onnx/<ep>-<dtype>")
        manifest = Path(local) / "mobius.json"
        if not manifest.is_file():
            raise PublishError(f"{local} is not a mobius package (no mobius.json)")
        manifest = json.loads(manifest.read_text())
        source = manifest.get("source", {})
        if (source.get("repo_id"), source.get("revision")) != (repo_id, sha):
            raise PublishError(
                f"{local} was built from {source.get('repo_id')}@{source.get('revision')}, "
                f"not {repo_id}@{sha}"
            )
        builds.add(json.dumps(built_with(manifest), sort_keys=True))
    if len(builds) > 1:
        raise PublishError(f"the packages were built with different options: {sorted(builds)}")
    return json.loads(builds.pop())


def _check_layout(layout_files: dict[str, Path], mode: str) -> None:
    """Only Transformers.js' model files, and in repo mode the side files at the root: a PR
    never changes the source's own files (as model_cards.layout places a package's)."""
    for path, local in layout_files.items():
        root_file = mode == "repo" and path in (CONFIG, *RUNTIME_FILES)
        if not (root_file or JS_MODEL.fullmatch(path)):
            raise PublishError(f"{path!r} is not a file of the Transformers.js layout")
        if not Path(local).is_file():
            raise PublishError(f"{local} (for {path}) is not a file")


def _operations(
    package_dirs: dict[str, Path],
    layout_files: dict[str, Path],
    card_text: str,
    card_file: str,
    mode: str,
) -> list[CommitOperationAdd]:
    """Every package file at its Hub path (model_cards.layout), then the Transformers.js files
    written beside the packages, each path once: variants of a Transformers.js-layout export
    share the root's config and tokenizer."""
    placed: dict[str, Path] = {}
    for _folder, local in sorted(package_dirs.items()):
        manifest = json.loads((Path(local) / "mobius.json").read_text())
        for path in sorted(Path(local).rglob("*")):
            relative = path.relative_to(local).as_posix()
            if path.is_file() and not any(p.startswith(".") for p in relative.split("/")):
                for target in hub_paths(manifest, relative, mode):
                    placed.setdefault(target, path)
    for target, path in layout_files.items():
        placed.setdefault(target, Path(path))
    operations = [CommitOperationAdd(target, path) for target, path in sorted(placed.items())]
    operations.append(CommitOperationAdd(card_file, card_text.encode()))
    return operations


def _refuse_overwrites(api: HfApi, repo_id: str, sha: str, operations) -> None:
    """A pull request never replaces graphs under `onnx/` that mobius did not put there (the
    repo's own `onnx/model.onnx`, say): only a repo whose default variant's manifest is there
    already holds mobius's own export, which a forced conversion may renew."""
    existing = set(api.list_repo_files(repo_id, revision=sha))
    if any(re.fullmatch(r"onnx/default-[^/]+/mobius\.json", path) for path in existing):
        return
    flat = (op.path_in_repo for op in operations if op.path_in_repo.count("/") == 1)
    clash = sorted(p for p in flat if p in existing and not p.endswith("README.md"))
    if clash:
        raise PublishError(
            f"{repo_id} already has {', '.join(clash)}; mobius does not replace a repo's own "
            "ONNX files in a pull request (publish to a repo of its own instead)"
        )


def _explain(err: Exception, mode: str, where: str) -> str:
    action = "opening a pull request on" if mode == "pr" else "publishing to"
    if isinstance(err, hub_retry.HubUnavailable):
        return f"{action} {where} failed: {err}"
    if isinstance(err, RuntimeError) and isinstance(err.__cause__, Exception):
        return f"{_explain(err.__cause__, mode, where)} ({err})"  # the client wraps LFS uploads
    if isinstance(err, RepositoryNotFoundError):
        return f"{action} {where} failed: repo not found (or the token cannot see it)"
    if isinstance(err, HfHubHTTPError):
        status = err.response.status_code
        if status == 401:
            return f"{action} {where} failed: the Hub rejected the token"
        detail = f": {err.server_message.strip()}" if err.server_message else ""
        return f"{action} {where} failed: the Hub answered HTTP {status}{detail}"
    if isinstance(err, httpx2.TransportError):
        return f"{action} {where} failed: cannot reach the Hub ({type(err).__name__})"
    return f"{action} {where} failed: {type(err).__name__}: {err}"


def _scrub(text: str, token: str) -> str:
    return TOKEN_LIKE.sub("hf_***", text.replace(token, "***") if token else text)

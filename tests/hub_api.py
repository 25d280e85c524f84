"""The write side of the loopback Hub (see `tests/hub_server.py`), as the real client calls it.

Served for `FakeHub` by `WriteApi`: `whoami`, repo create/delete, README metadata validation,
preupload, the LFS batch/upload/verify protocol, NDJSON commits (with `create_pr`), refs, and
discussions/pull requests (list, create, details, comment, status, merge).

What the client needs, as measured against huggingface_hub 2.4:
- preupload answers `uploadMode` and `shouldIgnore` for every file, and `oid` for files already at
  that revision (git blob sha1 for regular files, sha256 for LFS): the client drops unchanged files
  from the commit, and makes no commit at all when nothing changed.
- the LFS batch answer's `actions.upload.href` is PUT without an Authorization header; `verify` is
  POSTed with it. With `create_pr` the client sends no `ref` in the batch request.
- a commit is NDJSON: a `header` line (summary, description, parentCommit) then `file` (base64),
  `lfsFile` (oid/size of an uploaded object), `deletedFile`, `deletedFolder` lines. The client
  reads `commitOid`, `commitUrl` and, with `create_pr`, the PR number from `pullRequestUrl`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import uuid
from typing import Any
from urllib.parse import unquote

import yaml

from tests.hub_server import (
    LFS_SUFFIXES,
    REPO,
    Discussion,
    FakeHub,
    HubError,
    Repo,
    Request,
    Response,
    git_blob_sha,
    is_lfs,
    now,
)

PAGE_SIZE = 50  # discussions per page
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
GITATTRIBUTES = "".join(f"*{s} filter=lfs diff=lfs merge=lfs -text\n" for s in LFS_SUFFIXES)
STALE_PARENT = "A commit has happened since. Please refresh and try again."
DISCUSSION = rf"/api/models/{REPO}/discussions/(?P<num>\d+)"


def _flag(request: Request, name: str) -> bool:
    return request.query.get(name, ["0"])[0].lower() in ("1", "true")


def _author(name: str) -> dict[str, str]:
    return {"name": name, "type": "user"}


def _event(kind: str, author: str, data: dict[str, Any]) -> dict[str, Any]:
    """A discussion event as the Hub serializes it (`comment`, `commit`, `status-change`)."""
    created = now()
    if kind == "comment":
        text = data["text"]
        latest = {"raw": text, "html": f"<p>{html.escape(text)}</p>", "updatedAt": created}
        data = {
            "edited": False,
            "hidden": False,
            "numEdits": 0,
            "editors": [author],
            "reactions": [],
            "latest": latest | {"author": _author(author)},
        }
    return {
        "id": uuid.uuid4().hex[:24],
        "type": kind,
        "createdAt": created,
        "author": _author(author),
        "data": data,
    }


def _changed(old: dict[str, bytes], new: dict[str, bytes]) -> set[str]:
    return {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}


class WriteApi:
    """Registers the write routes on `hub`; the state lives in the hub's `Repo`s."""

    def __init__(self, hub: FakeHub) -> None:
        self.hub = hub
        routes = [
            ("GET", r"/api/whoami-v2", self.whoami),
            ("POST", r"/api/repos/create", self.create_repo),
            ("DELETE", r"/api/repos/delete", self.delete_repo),
            ("POST", r"/api/validate-yaml", self.validate_yaml),
            ("POST", rf"/api/models/{REPO}/preupload/(?P<rev>[^/]+)", self.preupload),
            ("POST", rf"/{REPO}\.git/info/lfs/objects/batch", self.lfs_batch),
            ("PUT", rf"/_lfs/{REPO}/(?P<oid>[0-9a-f]{{64}})", self.lfs_upload),
            ("POST", rf"/{REPO}\.git/info/lfs/objects/verify", self.lfs_verify),
            ("POST", rf"/api/models/{REPO}/commit/(?P<rev>[^/]+)", self.commit),
            ("GET", rf"/api/models/{REPO}/refs", self.refs),
            ("GET", rf"/api/models/{REPO}/commits/(?P<rev>[^/]+)", self.list_commits),
            ("GET", rf"/api/models/{REPO}/discussions", self.list_discussions),
            ("POST", rf"/api/models/{REPO}/discussions", self.create_discussion),
            ("GET", DISCUSSION, self.discussion_details),
            ("POST", rf"{DISCUSSION}/comment", self.comment),
            ("POST", rf"{DISCUSSION}/status", self.change_status),
            ("POST", rf"{DISCUSSION}/merge", self.merge),
        ]
        for method, pattern, handler in routes:
            hub.add_route(method, pattern, handler)

    # -- rules -----------------------------------------------------------------------------
    def check_write(self, user: str, repo: Repo, branch: str, create_pr: bool) -> None:
        """Opening a PR needs read access only; pushing to a PR branch is allowed to its author."""
        if create_pr or self.hub.can_write(user, repo.namespace):
            return
        pr = self.pull_request_at(repo, branch)
        if pr is None or pr.author != user:
            msg = f"You don't have write access to {repo.repo_id} (signed in as {user})"
            raise HubError(403, None, msg)

    def pull_request_at(self, repo: Repo, ref: str) -> Discussion | None:
        match = re.fullmatch(r"refs/pr/(\d+)", ref)
        if match is None or not 0 < int(match[1]) <= len(repo.discussions):
            return None
        return repo.discussions[int(match[1]) - 1]

    def discussion(self, request: Request, match: re.Match[str]) -> tuple[Repo, Discussion]:
        repo = self.hub.repo(request, match["repo"])
        num = int(match["num"])
        if not 0 < num <= len(repo.discussions):
            raise HubError(404, None, f"Discussion #{num} not found")
        return repo, repo.discussions[num - 1]

    def parent(self, repo: Repo, given: str | None, head: str, create_pr: bool) -> str:
        """The commit to build on: the branch head, or `parentCommit` (a sha or a prefix of
        one), which must be the head itself, or for a PR any commit in the head's history."""
        if given is None:
            return head
        history, sha = [], head
        while True:
            history.append(sha)
            parents = repo.commits[sha].parents
            if not parents:
                break
            sha = parents[0]
        found = [sha for sha in (history if create_pr else [head]) if sha.startswith(given)]
        if len(found) != 1:
            raise HubError(412, None, STALE_PARENT)
        return found[0]

    # -- account and repos -----------------------------------------------------------------
    def whoami(self, request: Request, match: re.Match[str]) -> Response:
        user = self.hub.signed_in(request)
        orgs = [{"type": "org", "name": o} for o, m in sorted(self.hub.orgs.items()) if user in m]
        return Response.json(
            {
                "type": "user",
                "id": hashlib.md5(user.encode()).hexdigest()[:24],
                "name": user,
                "fullname": user,
                "email": f"{user}@example.com",
                "emailVerified": True,
                "isPro": False,
                "orgs": orgs,
                "auth": {"type": "access_token", "accessToken": {"role": "write"}},
            }
        )

    def create_repo(self, request: Request, match: re.Match[str]) -> Response:
        user = self.hub.signed_in(request)
        body = request.json() or {}
        name, namespace = body.get("name") or "", body.get("organization") or user
        if body.get("type", "model") != "model" or not NAME.fullmatch(name):
            raise HubError(400, None, f"Invalid model repo name {name!r}")
        if not self.hub.can_write(user, namespace):
            msg = f'You don\'t have the rights to create a model under the namespace "{namespace}"'
            raise HubError(403, None, msg)
        repo_id = f"{namespace}/{name}"
        url = f"{self.hub.url}/{repo_id}"
        if repo_id in self.hub.repos:
            message = "You already created this model repo"
            response = Response.json({"error": message, "url": url}, 409)
            response.headers["X-Error-Message"] = message
            return response
        private = body.get("visibility") == "private" or body.get("private") is True
        repo = self.hub.repos[repo_id] = Repo(repo_id, private=private)
        initial = {".gitattributes": GITATTRIBUTES.encode()}
        self.hub.add_commit(repo, "main", None, initial, "initial commit", author=user)
        return Response.json({"url": url, "name": repo_id})

    def delete_repo(self, request: Request, match: re.Match[str]) -> Response:
        user = self.hub.signed_in(request)
        body = request.json() or {}
        repo_id = f"{body.get('organization') or user}/{body.get('name')}"
        repo = self.hub.repo(request, repo_id)
        if not self.hub.can_write(user, repo.namespace):
            raise HubError(403, None, f"You don't have the rights to delete {repo_id}")
        del self.hub.repos[repo_id]
        return Response()

    def validate_yaml(self, request: Request, match: re.Match[str]) -> Response:
        """Checks a README's front matter: broken YAML is a 400 with `errors`, none a warning."""
        content = (request.json() or {}).get("content", "")
        front = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", content, re.S)
        if front is None:
            warning = {"message": "empty or missing yaml metadata in repo card"}
            return Response.json({"errors": [], "warnings": [warning]})
        try:
            data = yaml.safe_load(front[1])
        except yaml.YAMLError as err:
            return Response.json({"errors": [{"message": f"invalid YAML: {err}"}]}, 400)
        if data is not None and not isinstance(data, dict):
            return Response.json({"errors": [{"message": "metadata must be a YAML mapping"}]}, 400)
        return Response.json({"errors": [], "warnings": []})

    # -- uploads ---------------------------------------------------------------------------
    def preupload(self, request: Request, match: re.Match[str]) -> Response:
        user = self.hub.signed_in(request)
        repo = self.hub.repo(request, match["repo"])
        commit = self.hub.resolve(repo, match["rev"])
        self.check_write(user, repo, unquote(match["rev"]), _flag(request, "create_pr"))
        answers = []
        for item in (request.json() or {}).get("files", []):
            path, size = item["path"], int(item["size"])
            lfs = is_lfs(path, base64.b64decode(item.get("sample", "")), size)
            current = commit.files.get(path)
            oid = None
            if current is not None:
                lfs_now = is_lfs(path, current)
                oid = hashlib.sha256(current).hexdigest() if lfs_now else git_blob_sha(current)
            mode = "lfs" if lfs else "regular"
            answers.append({"path": path, "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        return Response.json({"files": answers, "commitOid": commit.sha})

    def lfs_batch(self, request: Request, match: re.Match[str]) -> Response:
        user = self.hub.signed_in(request)
        repo = self.hub.repo(request, match["repo"])
        body = request.json() or {}
        if body.get("operation") != "upload":
            raise HubError(400, None, "only the upload operation is served")
        if "ref" in body:  # no ref when the upload is for a pull request
            self.check_write(user, repo, body["ref"]["name"], create_pr=False)
        objects = []
        for item in body.get("objects", []):
            oid, size = item["oid"], int(item["size"])
            answer: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
            stored = repo.lfs.get(oid)
            if stored is None or len(stored) != size:
                upload = f"{self.hub.url}/_lfs/{repo.repo_id}/{oid}?size={size}"
                verify = f"{self.hub.url}/{repo.repo_id}.git/info/lfs/objects/verify"
                answer["actions"] = {"upload": {"href": upload}, "verify": {"href": verify}}
            objects.append(answer)
        response = Response.json({"transfer": "basic", "objects": objects})
        response.headers["Content-Type"] = "application/vnd.git-lfs+json"
        return response

    def lfs_upload(self, request: Request, match: re.Match[str]) -> Response:
        """Stands for the storage bucket's pre-signed URL: no token needed, content checked."""
        repo = self.hub.repos.get(match["repo"])
        oid, size = match["oid"], int(request.query.get("size", ["-1"])[0])
        if repo is None:
            raise HubError(404, None, "NoSuchBucket")
        if hashlib.sha256(request.body).hexdigest() != oid or len(request.body) != size:
            raise HubError(400, None, f"uploaded content does not match sha256 {oid}")
        repo.lfs[oid] = request.body
        return Response()

    def lfs_verify(self, request: Request, match: re.Match[str]) -> Response:
        self.hub.signed_in(request)
        repo = self.hub.repo(request, match["repo"])
        body = request.json() or {}
        stored = repo.lfs.get(body.get("oid", ""))
        if stored is None or len(stored) != body.get("size"):
            raise HubError(404, None, f"LFS object {body.get('oid')} was not uploaded")
        return Response.json({})

    # -- commits ---------------------------------------------------------------------------
    def commit(self, request: Request, match: re.Match[str]) -> Response:
        """Validates everything first, then records the commit (and PR) in one step."""
        user = self.hub.signed_in(request)
        repo = self.hub.repo(request, match["repo"])
        create_pr, branch = _flag(request, "create_pr"), unquote(match["rev"])
        if branch not in repo.refs:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {branch}")
        if create_pr and branch.startswith("refs/"):
            raise HubError(400, None, "A pull request must target a branch")
        self.check_write(user, repo, branch, create_pr)
        try:
            lines = [json.loads(line) for line in request.body.splitlines() if line.strip()]
        except ValueError as err:
            raise HubError(400, None, f"The commit payload is not NDJSON: {err}") from err
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, None, "The first line of a commit must be its header")
        header = lines[0]["value"]
        summary, description = header.get("summary") or "", header.get("description") or ""
        if not summary.strip():
            raise HubError(400, None, "A commit needs a summary")
        parent = self.parent(repo, header.get("parentCommit"), repo.refs[branch], create_pr)
        tree = self.apply(repo, dict(repo.commits[parent].files), lines[1:])
        answer: dict[str, Any] = {"success": True, "hookOutput": ""}
        if create_pr:
            pr = self.new_discussion(
                repo, user, summary, description, True, base=parent, target=branch
            )
            ref = pr.ref
        else:
            pr, ref = self.pull_request_at(repo, branch), branch
        sha = self.hub.add_commit(repo, ref, parent, tree, summary, description, user)
        if pr is not None:
            pr.events.append(_event("commit", user, {"subject": summary, "oid": sha}))
        if create_pr and pr is not None:
            answer["pullRequestUrl"] = f"{self.hub.url}/{repo.repo_id}/discussions/{pr.num}"
        url = f"{self.hub.url}/{repo.repo_id}/commit/{sha}"
        return Response.json(answer | {"commitOid": sha, "commitUrl": url})

    def apply(
        self, repo: Repo, tree: dict[str, bytes], operations: list[dict[str, Any]]
    ) -> dict[str, bytes]:
        for line in operations:
            key, value = line.get("key"), line.get("value") or {}
            path = str(value.get("path", ""))
            if not path or path.startswith("/") or ".." in path.split("/") or "\\" in path:
                raise HubError(400, None, f"Invalid path in commit: {path!r}")
            if key == "file":
                try:
                    tree[path] = base64.b64decode(value.get("content", ""), validate=True)
                except ValueError as err:
                    raise HubError(400, None, f"{path}: content is not base64") from err
            elif key == "lfsFile":
                data = repo.lfs.get(value.get("oid", ""))
                if data is None or len(data) != value.get("size", len(data)):
                    raise HubError(422, None, f"LFS object for {path} was never uploaded")
                tree[path] = data
            elif key == "deletedFile":
                if tree.pop(path, None) is None:
                    raise HubError(404, "EntryNotFound", "A file with this name doesn't exist")
            elif key == "deletedFolder":
                inside = [p for p in tree if p.startswith(path.rstrip("/") + "/")]
                if not inside:
                    raise HubError(404, "EntryNotFound", "A folder with this name doesn't exist")
                for name in inside:
                    del tree[name]
            else:
                raise HubError(400, None, f"Unknown commit operation {key!r}")
        return tree

    def refs(self, request: Request, match: re.Match[str]) -> Response:
        repo = self.hub.repo(request, match["repo"])

        def ref(name: str, full: str) -> dict[str, str]:
            return {"name": name, "ref": full, "targetCommit": repo.refs[name]}

        names = sorted(n for n in repo.refs if not n.startswith("refs/") and n not in repo.tags)
        branches = [ref(n, f"refs/heads/{n}") for n in names]
        tags = [ref(n, f"refs/tags/{n}") for n in sorted(repo.tags)]
        answer: dict[str, Any] = {"branches": branches, "converts": [], "tags": tags}
        if _flag(request, "include_prs"):
            prs = [pr.ref for pr in repo.pull_requests() if pr.ref in repo.refs]
            answer["pullRequests"] = [ref(name, name) for name in prs]
        return Response.json(answer)

    def list_commits(self, request: Request, match: re.Match[str]) -> Response:
        """The history of a revision, newest first (one page: no `Link` header)."""
        repo = self.hub.repo(request, match["repo"])
        commit = self.hub.resolve(repo, match["rev"])
        history = []
        while True:
            history.append(
                {
                    "id": commit.sha,
                    "authors": [{"user": commit.author or repo.namespace}],
                    "date": commit.date,
                    "title": commit.title,
                    "message": commit.description,
                }
            )
            if not commit.parents:
                return Response.json(history)
            commit = repo.commits[commit.parents[0]]

    # -- discussions and pull requests -----------------------------------------------------
    def new_discussion(
        self,
        repo: Repo,
        author: str,
        title: str,
        description: str,
        is_pull_request: bool,
        *,
        base: str | None = None,
        target: str = "main",
        status: str = "open",
    ) -> Discussion:
        num = len(repo.discussions) + 1
        discussion = Discussion(
            num, title, author, is_pull_request, now(), status, target=target, base=base
        )
        discussion.events.append(_event("comment", author, {"text": description}))
        repo.discussions.append(discussion)
        return discussion

    def summary(self, repo: Repo, discussion: Discussion) -> dict[str, Any]:
        return {
            "num": discussion.num,
            "title": discussion.title,
            "status": discussion.status,
            "createdAt": discussion.created_at,
            "author": _author(discussion.author),
            "isPullRequest": discussion.is_pull_request,
            "repo": {"name": repo.repo_id, "type": "model"},
            "numComments": len(discussion.comments()),
            "pinned": False,
            "topReactions": [],
        }

    def list_discussions(self, request: Request, match: re.Match[str]) -> Response:
        repo = self.hub.repo(request, match["repo"])
        kind = request.query.get("type", ["all"])[0]
        status = request.query.get("status", ["all"])[0]
        author = request.query.get("author", [None])[0]
        page = int(request.query.get("p", ["0"])[0])
        found = [
            d
            for d in reversed(repo.discussions)  # newest first, like the Hub
            if (kind == "all" or d.is_pull_request == (kind == "pull_request"))
            and (status == "all" or (d.status in ("open", "draft")) == (status == "open"))
            and (author is None or d.author == author)
        ]
        start = page * PAGE_SIZE
        shown = [self.summary(repo, d) for d in found[start : start + PAGE_SIZE]]
        closed = sum(d.status not in ("open", "draft") for d in found)
        page_info = {"count": len(found), "start": start, "numClosedDiscussions": closed}
        return Response.json({"discussions": shown} | page_info)

    def create_discussion(self, request: Request, match: re.Match[str]) -> Response:
        """A discussion, or a draft PR whose branch starts at the target's head."""
        user = self.hub.signed_in(request)
        repo = self.hub.repo(request, match["repo"])
        body = request.json() or {}
        is_pr = bool(body.get("pullRequest"))
        head = repo.refs["main"]
        status = "draft" if is_pr else "open"
        discussion = self.new_discussion(
            repo, user, body.get("title", ""), body.get("description", ""), is_pr, status=status
        )
        if is_pr:
            discussion.base = head
            repo.refs[discussion.ref] = head
        return Response.json(self.summary(repo, discussion) | {"pullRequest": is_pr})

    def discussion_details(self, request: Request, match: re.Match[str]) -> Response:
        repo, discussion = self.discussion(request, match)
        details = self.summary(repo, discussion) | {"events": discussion.events}
        if discussion.is_pull_request:
            changes: dict[str, Any] = {"base": f"refs/heads/{discussion.target}"}
            if discussion.merge_commit:
                changes["mergeCommitId"] = discussion.merge_commit
            details |= {"changes": changes, "filesWithConflicts": self.conflicts(repo, discussion)}
            if _flag(request, "diff"):
                details["diff"] = self.diff(repo, discussion)
        return Response.json(details)

    def comment(self, request: Request, match: re.Match[str]) -> Response:
        user = self.hub.signed_in(request)
        _, discussion = self.discussion(request, match)
        event = _event("comment", user, {"text": (request.json() or {}).get("comment", "")})
        discussion.events.append(event)
        return Response.json({"newMessage": event})

    def change_status(self, request: Request, match: re.Match[str]) -> Response:
        user = self.hub.signed_in(request)
        repo, discussion = self.discussion(request, match)
        body = request.json() or {}
        if body.get("status") not in ("open", "closed"):
            raise HubError(400, None, "status must be open or closed")
        if discussion.author != user and not self.hub.can_write(user, repo.namespace):
            raise HubError(403, None, f"{user} may not change the status of #{discussion.num}")
        if discussion.status == "merged":
            raise HubError(400, None, "A merged pull request cannot change status")
        if body.get("comment"):
            discussion.events.append(_event("comment", user, {"text": body["comment"]}))
        discussion.status = body["status"]
        event = _event("status-change", user, {"status": discussion.status})
        discussion.events.append(event)
        return Response.json({"newStatus": event})

    def merge(self, request: Request, match: re.Match[str]) -> Response:
        """Applies the PR's changes (since its base) on top of its target branch."""
        user = self.hub.signed_in(request)
        repo, pr = self.discussion(request, match)
        if not self.hub.can_write(user, repo.namespace):
            raise HubError(403, None, f"{user} may not merge into {repo.repo_id}")
        if not pr.is_pull_request or pr.status not in ("open", "draft"):
            raise HubError(400, None, f"#{pr.num} is not an open pull request")
        if self.conflicts(repo, pr):
            raise HubError(409, None, "This pull request has conflicts")
        base, head = repo.files(pr.base or pr.target), repo.files(pr.ref)
        tree = dict(repo.files(pr.target))
        for path in _changed(base, head):
            if path in head:
                tree[path] = head[path]
            else:
                tree.pop(path, None)
        parent = repo.refs[pr.target]
        title = f"Merge pull request #{pr.num}: {pr.title}"
        pr.merge_commit = self.hub.add_commit(repo, pr.target, parent, tree, title, author=user)
        pr.status = "merged"
        pr.events.append(_event("status-change", user, {"status": "merged"}))
        if (request.json() or {}).get("comment"):
            pr.events.append(_event("comment", user, {"text": request.json()["comment"]}))
        return Response.json({})

    def conflicts(self, repo: Repo, pr: Discussion) -> list[str]:
        """Files changed both in the PR and on its target since the PR's base."""
        if pr.status == "merged" or pr.ref not in repo.refs:
            return []
        base = repo.files(pr.base or pr.target)
        head, target = repo.files(pr.ref), repo.files(pr.target)
        both = _changed(base, head) & _changed(base, target)
        return sorted(p for p in both if head.get(p) != target.get(p))

    def diff(self, repo: Repo, pr: Discussion) -> str:
        """File-level git diff headers (no hunks) of the PR against its base."""
        base, head = repo.files(pr.base or pr.target), repo.files(pr.ref)
        out = []
        for path in sorted(_changed(base, head)):
            old, new = base.get(path), head.get(path)
            out.append(f"diff --git a/{path} b/{path}\n")
            if old is None:
                out.append("new file mode 100644\n")
            elif new is None:
                out.append("deleted file mode 100644\n")
            ids = [git_blob_sha(d)[:7] if d is not None else "0000000" for d in (old, new)]
            out.append(f"index {ids[0]}..{ids[1]}\n")
        return "".join(out)

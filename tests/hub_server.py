"""A loopback Hugging Face Hub for tests: the real `huggingface_hub` client talks to it over HTTP.

`FakeHub` keeps repos (commits, refs, files, discussions) in memory. This module holds the data
model, the access rules, the read side (`model_info`, `list_repo_tree`, `hf_hub_download`,
`snapshot_download`) and the HTTP plumbing; `tests/hub_api.py` serves the write side (whoami,
repo create/delete, preupload, LFS, commits, pull requests, discussions, refs). Errors carry the
`X-Error-Code` header the client turns into typed exceptions. Routes are a table, so a test can
add or override endpoints with `add_route`, or make one fail with `failing`; `faults`
(`tests/hub_faults.py`) injects error statuses, timeouts and dropped connections by plan.

Access: a token maps to a user. Public repos are readable by anyone, gated ones (their files) by
any signed-in user; a private repo only by members of its namespace (the user or the user's
orgs) and the users it was shared with (`readers`), and to everyone else it does not exist (404).
Writing needs the repo's namespace to be the user's or one of their orgs'; like the real Hub, any
signed-in user may open a pull request on a repo they can read.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import PurePosixPath
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

# Files the real Hub stores in LFS (by its default .gitattributes), plus anything >= 10 MiB.
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".onnx_data", ".gguf")
LFS_MIN_SIZE = 10 * 1024 * 1024
REPO = r"(?P<repo>[^/]+(?:/[^/]+)?)"


@dataclass(frozen=True)
class Request:
    """One request as the server received it; `path` is raw (still URL-escaped), no query."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    @property
    def token(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else None

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Response:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Response:
        body = json.dumps(data).encode()
        return cls(status, {"Content-Type": "application/json"}, body)


class HubError(Exception):
    """Raised by a route; becomes an error response with the Hub's `X-Error-*` headers."""

    def __init__(
        self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


@dataclass
class Commit:
    sha: str
    files: dict[str, bytes]  # the whole tree at this commit
    title: str
    parents: list[str]
    date: str
    description: str = ""
    author: str | None = None


@dataclass
class Discussion:
    """A discussion or pull request; a PR's changes live on the branch `refs/pr/{num}`."""

    num: int
    title: str
    author: str
    is_pull_request: bool
    created_at: str
    status: str = "open"  # "open" | "closed" | "merged" | "draft"
    target: str = "main"  # the branch a PR merges into
    base: str | None = None  # the commit a PR branched from
    merge_commit: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)  # comment, commit, status-change

    @property
    def ref(self) -> str:
        return f"refs/pr/{self.num}"

    def comments(self) -> list[str]:
        return [e["data"]["latest"]["raw"] for e in self.events if e["type"] == "comment"]


@dataclass
class Repo:
    repo_id: str
    private: bool = False
    gated: bool = False
    readers: set[str] = field(default_factory=set)  # users a private repo is shared with
    refs: dict[str, str] = field(default_factory=dict)  # "main", tags, "refs/pr/N" -> sha
    tags: set[str] = field(default_factory=set)  # which names in `refs` are tags
    commits: dict[str, Commit] = field(default_factory=dict)
    discussions: list[Discussion] = field(default_factory=list)  # num N is discussions[N - 1]
    lfs: dict[str, bytes] = field(default_factory=dict)  # sha256 -> uploaded LFS object

    @property
    def namespace(self) -> str:
        return self.repo_id.split("/")[0]

    def files(self, ref: str = "main") -> dict[str, bytes]:
        """The tree at a branch, `refs/pr/N` or sha (for tests)."""
        return self.commits[self.refs.get(ref, ref)].files

    def pull_requests(self) -> list[Discussion]:
        return [d for d in self.discussions if d.is_pull_request]


Route = Callable[[Request, re.Match[str]], Response]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(path: str, data: bytes, size: int | None = None) -> bool:
    """Stored in LFS: by suffix, size, or binary content (`data` may be just the 512-byte sample
    the client sends to preupload, then `size` is the file's)."""
    size = len(data) if size is None else size
    return path.endswith(LFS_SUFFIXES) or size >= LFS_MIN_SIZE or b"\0" in data[:512]


def lfs_pointer(data: bytes) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    spec = "version https://git-lfs.github.com/spec/v1"
    return f"{spec}\noid sha256:{digest}\nsize {len(data)}\n".encode()


def _card_data(readme: bytes | None) -> dict[str, Any] | None:
    """The YAML front matter of a README.md, as the Hub returns it in `cardData`."""
    text = (readme or b"").decode("utf-8", "replace")
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    data = yaml.safe_load(match.group(1)) if match else None
    return data if isinstance(data, dict) else None


def _config_summary(files: dict[str, bytes]) -> dict[str, Any]:
    """The `config` field of model info: config.json's architectures and model_type."""
    try:
        config = json.loads(files.get("config.json", b"{}"))
    except ValueError:
        config = {}
    return {k: config[k] for k in ("architectures", "model_type") if k in config}


class FakeHub:
    """An in-memory Hub on 127.0.0.1. Any token in `tokens` unlocks every private and gated repo
    for reading; writes follow namespaces (see the module docstring)."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, str] = {}  # token -> user name
        self.orgs: dict[str, set[str]] = {}  # org name -> member user names
        self.requests: list[Request] = []
        self.lock = threading.RLock()
        self.routes: list[tuple[str, re.Pattern[str], Route]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.add_route("GET", r"/api/agent-harnesses", self.agent_harnesses)
        self.add_route(
            "GET", rf"/api/models/{REPO}(?:/revision/(?P<rev>[^/]+))?", self.api_model_info
        )
        self.add_route("GET", r"/api/models", self.api_list_models)
        self.add_route("GET", rf"/api/models/{REPO}/auth-check", self.api_auth_check)
        self.add_route(
            "GET", rf"/api/models/{REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?", self.api_tree
        )
        for method in ("HEAD", "GET"):
            self.add_route(
                method, rf"/{REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)", self.resolve_file
            )
        from tests.hub_api import WriteApi  # the write side, in its own module; it imports this one
        from tests.hub_faults import Faults

        self.writes = WriteApi(self)
        self.faults = Faults()

    # -- life cycle ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeHub:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        self._server.daemon_threads = True
        self._server.hub = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.faults.clear()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(
        self, exc: type[BaseException] | None, val: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- store -----------------------------------------------------------------------------
    def add_token(self, token: str, user: str = "tester", orgs: tuple[str, ...] = ()) -> None:
        """Accept `token` as `user`, a member of `orgs` (who may then write to their repos)."""
        with self.lock:
            self.tokens[token] = user
            for org in orgs:
                self.orgs.setdefault(org, set()).add(user)

    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes],
        *,
        gated: bool = False,
        private: bool = False,
        readers: tuple[str, ...] = (),
    ) -> str:
        """Create a repo whose `main` holds `files`; returns the commit sha. A private repo is
        readable by its namespace's members and by `readers`."""
        with self.lock:
            if repo_id in self.repos:
                raise ValueError(f"repo {repo_id} exists")
            self.repos[repo_id] = Repo(repo_id, private=private, gated=gated, readers=set(readers))
            return self.commit(repo_id, files, title="initial commit")

    def add_tag(self, repo_id: str, tag: str, revision: str = "main") -> str:
        """Tag the commit `revision` (a branch or sha) resolves to; returns its sha."""
        with self.lock:
            repo = self.repos[repo_id]
            sha = repo.refs.get(revision, revision)
            repo.refs[tag] = sha
            repo.tags.add(tag)
            return sha

    def commit(
        self, repo_id: str, files: dict[str, bytes], *, branch: str = "main", title: str = "update"
    ) -> str:
        """Add or replace `files` on top of `branch` (a missing one starts from main); new sha."""
        with self.lock:
            repo = self.repos[repo_id]
            parent = repo.refs.get(branch, repo.refs.get("main"))
            tree = {**(repo.commits[parent].files if parent else {}), **files}
            return self.add_commit(repo, branch, parent, tree, title)

    def add_commit(
        self,
        repo: Repo,
        branch: str,
        parent: str | None,
        tree: dict[str, bytes],
        title: str,
        description: str = "",
        author: str | None = None,
    ) -> str:
        """Record a commit holding the whole `tree` and point `branch` at it; returns its sha."""
        with self.lock:
            blobs = sorted(git_blob_sha(b) for b in tree.values())
            seed = json.dumps([repo.repo_id, parent, title, blobs, len(repo.commits)])
            sha = hashlib.sha1(seed.encode()).hexdigest()
            parents = [parent] if parent else []
            repo.commits[sha] = Commit(sha, tree, title, parents, now(), description, author)
            repo.refs[branch] = sha
            return sha

    def add_route(self, method: str, pattern: str, handler: Route, *, first: bool = False) -> None:
        """Serve `method` requests whose raw path fully matches `pattern` (first match wins)."""
        self.routes.insert(0 if first else len(self.routes), (method, re.compile(pattern), handler))

    @contextmanager
    def failing(
        self, method: str, pattern: str, status: int = 500, message: str = "Internal Error"
    ) -> Iterator[list[Request]]:
        """Within the block, `method` requests matching `pattern` fail with `status`; yields the
        failed requests."""
        failed: list[Request] = []

        def fail(request: Request, match: re.Match[str]) -> Response:
            failed.append(request)
            raise HubError(status, None, message)

        entry = (method, re.compile(pattern), fail)
        with self.lock:
            self.routes.insert(0, entry)
        try:
            yield failed
        finally:
            with self.lock:
                self.routes.remove(entry)

    # -- access rules ----------------------------------------------------------------------
    def user(self, request: Request) -> str | None:
        """The caller's user name; an unknown token is rejected like the real Hub does."""
        token = request.token
        if token is None:
            return None
        if token not in self.tokens:
            raise HubError(401, None, "Invalid credentials in Authorization header")
        return self.tokens[token]

    def signed_in(self, request: Request) -> str:
        """The caller's user name; anonymous callers are refused (401)."""
        user = self.user(request)
        if user is None:
            raise HubError(401, None, "You must be authenticated to do this: no token was sent")
        return user

    def can_write(self, user: str, namespace: str) -> bool:
        return namespace == user or user in self.orgs.get(namespace, set())

    def can_read(self, user: str | None, repo: Repo) -> bool:
        if not repo.private:
            return True
        return user is not None and (self.can_write(user, repo.namespace) or user in repo.readers)

    def repo(self, request: Request, repo_id: str, *, content: bool = False) -> Repo:
        """The repo if the caller may see it; `content=True` also applies the gate (downloads)."""
        user = self.user(request)
        repo = self.repos.get(unquote(repo_id))
        if repo is None or not self.can_read(user, repo):
            status = 404 if user else 401
            raise HubError(status, "RepoNotFound", "Repository not found")
        if content and repo.gated and user is None:
            msg = f"Access to model {repo.repo_id} is restricted. You must have access to it and be authenticated to access it. Please log in."  # noqa: E501
            raise HubError(401, "GatedRepo", msg)
        return repo

    def resolve(self, repo: Repo, raw_rev: str) -> Commit:
        """A branch, tag, `refs/pr/N` or full commit sha (arrives URL-escaped) -> its commit."""
        rev = unquote(raw_rev)
        sha = repo.refs.get(rev, rev)
        if sha not in repo.commits:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return repo.commits[sha]

    # -- routes ----------------------------------------------------------------------------
    def agent_harnesses(self, request: Request, match: re.Match[str]) -> Response:
        return Response.json({"standardEnvVars": [], "harnesses": {}})

    def api_model_info(self, request: Request, match: re.Match[str]) -> Response:
        repo = self.repo(request, match["repo"])
        commit = self.resolve(repo, match["rev"] or "main")
        blobs = request.query.get("blobs", ["false"])[0].lower() == "true"
        siblings = []
        for path, data in sorted(commit.files.items()):
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                sibling |= {"size": len(data), "blobId": git_blob_sha(data)}
                if is_lfs(path, data):
                    lfs = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                    sibling["lfs"] = lfs | {"pointerSize": len(lfs_pointer(data))}
            siblings.append(sibling)
        info = {
            "_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "modelId": repo.repo_id,
            "author": repo.repo_id.split("/")[0] if "/" in repo.repo_id else None,
            "sha": commit.sha,
            "lastModified": commit.date,
            "createdAt": next(iter(repo.commits.values())).date,
            "private": repo.private,
            "gated": "auto" if repo.gated else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "config": _config_summary(commit.files),
            "cardData": _card_data(commit.files.get("README.md")),
            "siblings": siblings,
            "spaces": [],
            "usedStorage": sum(len(d) for d in commit.files.values()),
        }
        return Response.json(info)

    def api_auth_check(self, request: Request, match: re.Match[str]) -> Response:
        """`auth_check`: 200 if the caller may download the repo's files, else the error a
        download gets (RepoNotFound, GatedRepo)."""
        self.repo(request, match["repo"], content=True)
        return Response.json({})

    def api_list_models(self, request: Request, match: re.Match[str]) -> Response:
        """`list_models`: the repos the caller may read whose card tags hold every `filter` and
        whose id contains `search`, at most `limit`; `expand` picks the fields returned
        (`tags`, `config`, `siblings`; all of them when absent)."""
        user = self.user(request)
        wanted = set(request.query.get("filter", []))
        search = request.query.get("search", [""])[0]
        limit = int(request.query.get("limit", ["1000"])[0])
        expand = request.query.get("expand", [])
        items = []
        for repo in list(self.repos.values()):
            files = repo.files()
            tags = (_card_data(files.get("README.md")) or {}).get("tags") or []
            listed = wanted <= set(tags) and search in repo.repo_id
            if not listed or not self.can_read(user, repo):
                continue
            fields = {
                "tags": tags,
                "config": _config_summary(files),
                "siblings": [{"rfilename": path} for path in sorted(files)],
            }
            item = {"_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24], "id": repo.repo_id}
            item |= {k: v for k, v in fields.items() if not expand or k in expand}
            items.append(item | {"private": repo.private})
        return Response.json(items[:limit])

    def api_tree(self, request: Request, match: re.Match[str]) -> Response:
        repo = self.repo(request, match["repo"])
        commit = self.resolve(repo, match["rev"])
        base = unquote(match["path"] or "").strip("/")
        recursive = request.query.get("recursive", ["false"])[0].lower() == "true"
        prefix = f"{base}/" if base else ""
        dirs = {str(p) for f in commit.files for p in PurePosixPath(f).parents if str(p) != "."}
        if base and base not in dirs:
            raise HubError(404, "EntryNotFound", f"{base} does not exist on {match['rev']}")
        entries: list[dict[str, Any]] = []
        for name in sorted(dirs | set(commit.files)):
            rest = name.removeprefix(prefix)
            if not name.startswith(prefix) or not rest or (not recursive and "/" in rest):
                continue
            if name in dirs:
                oid = hashlib.sha1(f"{commit.sha}:{name}".encode()).hexdigest()
                entries.append({"type": "directory", "oid": oid, "size": 0, "path": name})
                continue
            data = commit.files[name]
            entry = {"type": "file", "oid": git_blob_sha(data), "size": len(data), "path": name}
            if is_lfs(name, data):
                entry["lfs"] = {
                    "oid": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                    "pointerSize": len(lfs_pointer(data)),
                }
            entries.append(entry)
        return Response.json(entries)

    def resolve_file(self, request: Request, match: re.Match[str]) -> Response:
        repo = self.repo(request, match["repo"], content=True)
        commit = self.resolve(repo, match["rev"])
        path = unquote(match["path"])
        if path not in commit.files:
            headers = {"X-Repo-Commit": commit.sha}
            raise HubError(404, "EntryNotFound", "Entry not found", headers)
        data = commit.files[path]
        headers = {
            "Content-Type": "application/octet-stream",
            "Accept-Ranges": "bytes",
            "X-Repo-Commit": commit.sha,
            "ETag": f'"{git_blob_sha(data)}"',
        }
        if is_lfs(path, data):
            headers["X-Linked-Etag"] = f'"{hashlib.sha256(data).hexdigest()}"'
            headers["X-Linked-Size"] = str(len(data))
        byte_range = re.fullmatch(r"bytes=(\d+)-(\d*)", request.headers.get("range", ""))
        if byte_range is None:
            return Response(200, headers, data)
        start = int(byte_range[1])
        end = min(int(byte_range[2] or len(data) - 1), len(data) - 1)
        if start > end:
            headers["Content-Range"] = f"bytes */{len(data)}"
            return Response(416, headers)
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return Response(206, headers, data[start : end + 1])

    # -- dispatch --------------------------------------------------------------------------
    def handle(self, request: Request) -> Response:
        with self.lock:
            self.requests.append(request)
            try:
                for method, pattern, handler in self.routes:
                    match = pattern.fullmatch(request.path)
                    if method == request.method and match:
                        return handler(request, match)
                raise HubError(404, None, f"no route for {request.method} {request.path}")
            except HubError as err:
                headers = {"X-Error-Message": err.message, **err.headers}
                if err.code:
                    headers["X-Error-Code"] = err.code
                response = Response.json({"error": err.message}, err.status)
                response.headers |= headers
                return response


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real Hub; every response has a length

    def _serve(self) -> None:
        hub: FakeHub = self.server.hub  # type: ignore[attr-defined]
        url = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(self.command, url.path, parse_qs(url.query), headers, self._body())
        fault = hub.faults.take(request.method, request.path)
        if fault is not None and fault.silent:
            if fault.kind == "lost-reply":
                hub.handle(request)
            elif fault.kind == "timeout":
                hub.faults.hang()  # outside the hub's lock: other requests go on
            self.close_connection = True  # closed without an answer
            return
        response = hub.handle(request) if fault is None else fault.answer()
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet; tests read FakeHub.requests instead

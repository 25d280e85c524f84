"""A loopback GitHub API (served under `/api/v3`, like GitHub Enterprise) with just what
github3.py calls for `gh.issue(owner, repo, n).create_comment(body)`; URLs point back here.

    with FakeGitHub() as gh:
        gh.add_token("ghp_x", "mobius-bot")
        gh.add_issue("octo/models", 1, "convert please")
        ... github3.GitHubEnterprise(gh.url, token="ghp_x") ...
        gh.comments[("octo/models", 1)]          # [(login, body), ...]
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ISSUE = re.compile(
    r"/api/v3/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<num>\d+)(?P<comments>/comments)?"
)
STAMP = "2024-01-01T00:00:00Z"


class FakeGitHub:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.github = self  # type: ignore[attr-defined]
        self.tokens: dict[str, str] = {}
        self.issues: dict[tuple[str, int], str] = {}
        self.comments: dict[tuple[str, int], list[tuple[str, str]]] = {}
        self.ids = itertools.count(1000)
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_token(self, token: str, login: str) -> None:
        self.tokens[token] = login

    def add_issue(self, repo: str, number: int, title: str) -> None:
        self.issues[(repo, number)] = title
        self.comments.setdefault((repo, number), [])

    def user(self, login: str) -> dict[str, Any]:
        api = f"{self.url}/api/v3/users/{login}"
        return {
            "login": login,
            "id": abs(hash(login)) % 10**8,
            "avatar_url": f"{self.url}/avatars/{login}",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.url}/{login}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": "User",
            "site_admin": False,
        }

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        api = f"{self.url}/api/v3/repos/{repo}/issues/{number}"
        return {
            "url": api,
            "id": number,
            "number": number,
            "title": self.issues[(repo, number)],
            "body": "",
            "body_html": "",
            "body_text": "",
            "state": "open",
            "locked": False,
            "user": self.user("someone"),
            "assignee": None,
            "assignees": [],
            "labels": [],
            "labels_url": f"{api}/labels{{/name}}",
            "milestone": None,
            "comments": len(self.comments[(repo, number)]),
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "html_url": f"{self.url}/{repo}/issues/{number}",
            "closed_at": None,
            "closed_by": None,
            "created_at": STAMP,
            "updated_at": STAMP,
        }

    def comment(self, repo: str, number: int, login: str, body: str) -> dict[str, Any]:
        with self.lock:
            self.comments[(repo, number)].append((login, body))
            cid = next(self.ids)
        issue = f"{self.url}/api/v3/repos/{repo}/issues/{number}"
        return {
            "url": f"{self.url}/api/v3/repos/{repo}/issues/comments/{cid}",
            "html_url": f"{self.url}/{repo}/issues/{number}#issuecomment-{cid}",
            "issue_url": issue,
            "id": cid,
            "body": body,
            "body_html": body,
            "body_text": body,
            "user": self.user(login),
            "author_association": "NONE",
            "created_at": STAMP,
            "updated_at": STAMP,
        }


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def _send(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self, method: str) -> None:
        gh: FakeGitHub = self.server.github  # type: ignore[attr-defined]
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        auth = self.headers.get("Authorization", "")
        login = gh.tokens.get(auth.removeprefix("token ").removeprefix("Bearer "))
        if login is None:
            return self._send(401, {"message": "Bad credentials"})
        match = ISSUE.fullmatch(self.path.split("?")[0])
        if match is None:
            return self._send(404, {"message": "Not Found"})
        key = (match["repo"], int(match["num"]))
        if key not in gh.issues:
            return self._send(404, {"message": "Not Found"})
        if method == "GET" and not match["comments"]:
            return self._send(200, gh.issue(*key))
        if method == "POST" and match["comments"]:
            body = (json.loads(raw or b"{}") or {}).get("body", "")
            return self._send(201, gh.comment(*key, login, body))
        return self._send(404, {"message": "Not Found"})

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def log_message(self, format: str, *args: Any) -> None:
        pass

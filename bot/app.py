"""The webhook server: `POST /webhooks/hub`, `POST /webhooks/github`, `GET /health`.

A request is checked (secret or signature, size), parsed, deduplicated by comment id, turned
into a job (`JobQueue.submit`) and answered 202; the replies it owes are recorded in the bot
store and posted by the `Notifier` thread, never inside the request.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from huggingface_hub import WebhookPayload
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from bot.commands import Command, CommandError, check_repo_id, parse_github, parse_mention, usage
from bot.replies import (
    GitHubReplies,
    HubReplies,
    Notifier,
    ack_text,
    github_target,
    hub_target,
    make_poster,
    status_text,
)
from bot.store import BotStore
from pipeline.jobs import ConversionRequest, JobQueue, JobRefused

MAX_BODY = 1 << 20
log = logging.getLogger("mobius.bot")


@dataclass(frozen=True)
class Settings:
    """`hub_secret` ($WEBHOOK_SECRET) and `github_secret` ($GITHUB_WEBHOOK_SECRET) authenticate
    deliveries; `handle` ($MOBIUS_BOT_HANDLE, default the token's user name) is what people
    mention; `allow` ($MOBIUS_BOT_ALLOW, comma-separated) limits the Hub namespaces served.
    Rate limits: commands per repo and per user in `rate_window_s`."""

    hub_secret: str
    github_secret: str | None = None
    handle: str | None = None
    allow: tuple[str, ...] = ()
    repo_rate: int = 5
    user_rate: int = 10
    rate_window_s: float = 3600.0
    max_body: int = MAX_BODY
    poll_s: float = 1.0
    store_path: Path = field(default_factory=lambda: Path("bot.db"))

    @classmethod
    def from_env(cls, store_path: Path, **overrides: Any) -> Settings:
        secret = os.environ.get("WEBHOOK_SECRET", "")
        if not secret:
            raise ValueError("set WEBHOOK_SECRET: the bot refuses unauthenticated Hub webhooks")
        allow = os.environ.get("MOBIUS_BOT_ALLOW", "")
        return cls(
            hub_secret=secret,
            github_secret=os.environ.get("GITHUB_WEBHOOK_SECRET") or None,
            handle=os.environ.get("MOBIUS_BOT_HANDLE") or None,
            allow=tuple(n.strip() for n in allow.split(",") if n.strip()),
            store_path=store_path,
            **overrides,
        )


class _Reject(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def create_app(
    queue: JobQueue,
    hub: HubReplies,
    github: GitHubReplies | None,
    settings: Settings,
) -> FastAPI:
    if not settings.hub_secret:
        raise ValueError("a Hub webhook secret is required")
    store = BotStore(settings.store_path)
    notifier = Notifier(store, queue, make_poster(hub, github), settings.poll_s)
    bot = _Bot(queue, hub, settings, store, notifier)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        notifier.start()
        try:
            yield
        finally:
            notifier.stop()

    app = FastAPI(title="mobius bot", lifespan=lifespan)
    app.state.bot, app.state.store, app.state.notifier = bot, store, notifier

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/webhooks/hub")
    async def hub_webhook(request: Request) -> JSONResponse:
        try:
            given = request.headers.get("x-webhook-secret")
            if given is None:
                raise _Reject(401, "missing X-Webhook-Secret")
            if not hmac.compare_digest(given.encode(), settings.hub_secret.encode()):
                raise _Reject(403, "wrong X-Webhook-Secret")
            body = await _read(request, settings.max_body)
            try:
                payload = WebhookPayload.model_validate_json(body)
            except ValidationError as err:
                detail = f"not a Hub webhook payload ({err.error_count()} errors)"
                raise _Reject(400, detail) from err
            status, answer = await run_in_threadpool(bot.on_hub, payload)
        except _Reject as err:
            return JSONResponse({"error": err.detail}, status_code=err.status)
        return JSONResponse(answer, status_code=status)

    @app.post("/webhooks/github")
    async def github_webhook(request: Request) -> JSONResponse:
        try:
            if not settings.github_secret or github is None:
                raise _Reject(404, "GitHub intake is not configured")
            signature = request.headers.get("x-hub-signature-256")
            if signature is None:
                raise _Reject(401, "missing X-Hub-Signature-256")
            body = await _read(request, settings.max_body)
            mac = hmac.new(settings.github_secret.encode(), body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(signature.encode(), f"sha256={mac}".encode()):
                raise _Reject(403, "bad X-Hub-Signature-256")
            event = request.headers.get("x-github-event", "")
            if event == "ping":
                return JSONResponse({"status": "pong"})
            if event != "issue_comment":
                return JSONResponse({"status": "ignored", "reason": f"event {event}"})
            try:
                payload = json.loads(body)
            except ValueError as err:
                raise _Reject(400, "body is not JSON") from err
            status, answer = await run_in_threadpool(bot.on_github, payload)
        except _Reject as err:
            return JSONResponse({"error": err.detail}, status_code=err.status)
        return JSONResponse(answer, status_code=status)

    return app


async def _read(request: Request, limit: int) -> bytes:
    """The body, refused with 413 past `limit` bytes (by header or while streaming)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise _Reject(413, f"body over {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _Reject(413, f"body over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


Answer = tuple[int, dict[str, Any]]


def _ignored(reason: str) -> Answer:
    return 200, {"status": "ignored", "reason": reason}


class _Bot:
    """What happens to an authenticated delivery (runs in a worker thread)."""

    def __init__(
        self,
        queue: JobQueue,
        hub: HubReplies,
        settings: Settings,
        store: BotStore,
        notifier: Notifier,
    ) -> None:
        self.queue, self.hub, self.settings = queue, hub, settings
        self.store, self.notifier = store, notifier

    @property
    def handle(self) -> str:
        return self.settings.handle or str(self.hub.me()["name"])

    def on_hub(self, p: WebhookPayload) -> Answer:
        if (p.event.action, p.event.scope) != ("create", "discussion.comment"):
            return _ignored(f"event {p.event.scope} {p.event.action}")
        comment, discussion = p.comment, p.discussion
        if comment is None or discussion is None:
            return _ignored("no comment in the payload")
        if p.repo.type != "model":
            return _ignored(f"{p.repo.type} repos are not converted")
        if comment.hidden:
            return _ignored("hidden comment")
        if discussion.status not in ("open", "draft"):
            return _ignored(f"discussion is {discussion.status}")
        if comment.author.id == self.hub.me().get("id"):
            return _ignored("the bot's own comment")
        if self.settings.allow and p.repo.name.split("/")[0] not in self.settings.allow:
            return _ignored("namespace not on the allow-list")
        target = hub_target(p.repo.name, discussion.num)
        try:
            command = parse_mention(comment.content or "", self.handle)
        except CommandError as err:
            return self._once(f"hub:{comment.id}", target, comment.author.id, p.repo.name, err)
        if command is None:
            return _ignored("no mention of the bot")
        return self._once(f"hub:{comment.id}", target, comment.author.id, p.repo.name, command)

    def on_github(self, payload: dict[str, Any]) -> Answer:
        try:
            if payload.get("action") != "created":
                return _ignored(f"action {payload.get('action')}")
            comment, issue = payload["comment"], payload["issue"]
            repo, number = payload["repository"]["full_name"], int(issue["number"])
            user = comment["user"]
            body, comment_id = comment.get("body") or "", comment["id"]
        except (KeyError, TypeError, ValueError):
            return 400, {"error": "not an issue_comment payload"}
        if user.get("type") == "Bot":
            return _ignored("a bot's comment")
        target, who = github_target(repo, number), f"gh:{user.get('login')}"
        delivery = f"github:{comment_id}"
        try:
            command = parse_github(body, self.handle)
        except CommandError as err:
            return self._once(delivery, target, who, None, err)
        if command is None:
            return _ignored("no /convert command")
        return self._once(delivery, target, who, command.source, command)

    def _once(
        self,
        delivery: str,
        target: dict[str, Any],
        user: str,
        repo_id: str | None,
        command: Command | CommandError,
    ) -> Answer:
        """Handle a comment once: a redelivered comment id gets 200 and nothing else."""
        if not self.store.claim(delivery):
            return 200, {"status": "duplicate"}
        try:
            answer = self._handle(target, user, repo_id, command)
        except Exception:
            self.store.release(delivery)  # nothing was done: let the sender retry
            raise
        self.notifier.wake()
        return answer

    def _handle(
        self,
        target: dict[str, Any],
        user: str,
        repo_id: str | None,
        command: Command | CommandError,
    ) -> Answer:
        s = self.settings
        scopes = [f"user:{user}"] + ([f"repo:{repo_id}"] if repo_id else [])
        counts = self.store.hit(scopes, s.rate_window_s)
        for scope, limit in ((scopes[0], s.user_rate), (scopes[-1], s.repo_rate)):
            if counts[scope] > limit:
                if counts[scope] == limit + 1:  # say it once per window, then stay quiet
                    self.store.owe(
                        target,
                        None,
                        f"Too many requests ({scope.split(':')[0]} "
                        f"limit: {limit} per hour); try again later.",
                    )
                return 200, {"status": "rate-limited", "scope": scope}
        if isinstance(command, CommandError):
            self.store.owe(target, None, str(command))
            return 202, {"status": "replied", "reason": "malformed command"}
        if command.action == "help":
            self.store.owe(target, None, usage(self.handle))
            return 202, {"status": "replied"}
        source = command.source or repo_id
        assert source is not None
        allow = self.settings.allow
        if allow and source.split("/")[0] not in allow:
            self.store.owe(target, None, f"This bot converts models of {', '.join(allow)} only.")
            return 202, {"status": "refused", "reason": "namespace not on the allow-list"}
        if command.action == "status":
            jobs = [j for j in self.queue.recent(200) if j.request.source == source]
            self.store.owe(target, None, status_text(jobs, source))
            return 202, {"status": "replied"}
        try:
            check_repo_id(source, self.handle)
        except CommandError as err:
            self.store.owe(target, None, str(err))
            return 202, {"status": "replied", "reason": "bad repo id"}
        request = ConversionRequest(
            source=source,
            eps=command.eps,
            dtypes=command.dtypes,
            revision=command.revision,
            publish=command.publish,
            requester=user,
            origin="github" if target["kind"] == "github" else "hub-mention",
        )
        submitted = time.time()
        try:
            job_id = self.queue.submit(request)
        except JobRefused as err:
            self.store.owe(target, None, f"I cannot convert that: {err}")
            return 202, {"status": "refused", "reason": str(err)}
        job = self.queue.get(job_id)
        fresh = job.created_at >= submitted
        if not fresh and job.state in ("succeeded", "failed"):
            self.store.owe(target, job_id, None)  # converted before: the result, at once
        else:
            self.store.owe(target, job_id, ack_text(job_id, command.describe(), not fresh))
        return 202, {"status": "queued", "job": job_id}

"""The webhook server: `POST /webhooks/hub`, `POST /webhooks/github`, `GET /health`.

A request is checked (secret or signature, size, read deadline), parsed, deduplicated by comment
id, checked against the budgets, validated (`ConversionRequest`), turned into a job
(`JobQueue.submit`) and answered 202; the replies it owes are recorded in the bot store and
posted by the `Notifier` thread, never inside the request.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from huggingface_hub import WebhookPayload
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from bot.commands import (
    Command,
    CommandError,
    check_repo_id,
    parse_github,
    parse_mention,
    usage,
)
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
from bot.store import OUTAGES, BotStore
from converter.repo_files import is_repo_id
from pipeline.admission import ReadAs
from pipeline.jobs import ConversionRequest, JobQueue, JobRefused
from pipeline.request import BadRequest, Origin

MAX_BODY = 1 << 20
log = logging.getLogger("mobius.bot")


@dataclass(frozen=True)
class Settings:
    """`hub_secret` ($WEBHOOK_SECRET) and `github_secret` ($GITHUB_WEBHOOK_SECRET) authenticate
    deliveries; `handle` ($MOBIUS_BOT_HANDLE, default the token's user name) is what people
    mention; `allow` ($MOBIUS_BOT_ALLOW, comma-separated) limits the Hub namespaces served;
    `github_users` ($MOBIUS_GITHUB_USERS, `login=namespace,...`) are the GitHub users who may
    convert private repos of those Hub namespaces.

    Budgets per `rate_window_s`: accepted conversions per requester (`user_rate`) and per
    source repo (`repo_rate`); commands answered per user (`reply_rate`, a flood limit: every
    command gets a reply). A request must arrive within `read_timeout_s`; a failed reply is
    retried after `retry_s`, doubling."""

    hub_secret: str
    github_secret: str | None = None
    handle: str | None = None
    allow: tuple[str, ...] = ()
    github_users: Mapping[str, frozenset[str]] = field(default_factory=dict)
    repo_rate: int = 5
    user_rate: int = 10
    reply_rate: int = 60
    rate_window_s: float = 3600.0
    max_body: int = MAX_BODY
    read_timeout_s: float = 10.0
    poll_s: float = 1.0
    retry_s: float = 2.0
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
            github_users=github_users(os.environ.get("MOBIUS_GITHUB_USERS", "")),
            store_path=store_path,
            **overrides,
        )


def github_users(text: str) -> dict[str, frozenset[str]]:
    """`octocat=alice,hubot=acme,octocat=acme-labs` -> GitHub login (lower case, as GitHub
    compares them) -> the Hub namespaces whose private repos that user may convert."""
    mapping: dict[str, set[str]] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        login, _, namespace = (part.strip() for part in item.partition("="))
        if not login or "/" in namespace or not is_repo_id(namespace):  # one part: a name
            raise ValueError(f"MOBIUS_GITHUB_USERS: '{item}' is not `github-login=hub-namespace`")
        mapping.setdefault(login.lower(), set()).add(namespace)
    return {login: frozenset(names) for login, names in mapping.items()}


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True)


class _GitHubUser(_Strict):
    login: str
    type: str = "User"


class _GitHubComment(_Strict):
    id: int
    body: str | None = None
    user: _GitHubUser


class _GitHubIssue(_Strict):
    number: Annotated[int, Field(gt=0)]


class _GitHubRepository(_Strict):
    full_name: Annotated[str, Field(pattern=r"^[\w.-]+/[\w.-]+$")]


class IssueCommentEvent(_Strict):
    """The parts of GitHub's `issue_comment` webhook the bot reads (others are ignored)."""

    action: str
    issue: _GitHubIssue
    comment: _GitHubComment
    repository: _GitHubRepository


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
    post = make_poster(hub, github)
    notifier = Notifier(store, queue, post, settings.poll_s, settings.retry_s)
    bot = _Bot(queue, hub, settings, store, notifier)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        notifier.start()
        try:
            yield
        finally:
            notifier.stop()

    app = FastAPI(
        title="mobius bot", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.bot, app.state.store, app.state.notifier = bot, store, notifier
    app.state.settings = settings

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
            body = await _read(request, settings.max_body, settings.read_timeout_s)
            try:
                payload = WebhookPayload.model_validate_json(body)
            except ValidationError as err:
                detail = f"not a Hub webhook payload ({err.error_count()} errors)"
                raise _Reject(400, detail) from err
        except _Reject as err:
            return _rejected(err)
        return await _answer(bot.on_hub, payload)

    @app.post("/webhooks/github")
    async def github_webhook(request: Request) -> JSONResponse:
        try:
            if not settings.github_secret or github is None:
                raise _Reject(404, "GitHub intake is not configured")
            signature = request.headers.get("x-hub-signature-256")
            if signature is None:
                raise _Reject(401, "missing X-Hub-Signature-256")
            body = await _read(request, settings.max_body, settings.read_timeout_s)
            mac = hmac.new(settings.github_secret.encode(), body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(signature.encode(), f"sha256={mac}".encode()):
                raise _Reject(403, "bad X-Hub-Signature-256")
            event = request.headers.get("x-github-event", "")
            if event == "ping":
                return JSONResponse({"status": "pong"})
            if event != "issue_comment":
                return JSONResponse({"status": "ignored", "reason": f"event {event}"})
            try:
                payload = IssueCommentEvent.model_validate_json(body)
            except ValidationError as err:
                detail = f"not an issue_comment payload ({err.error_count()} errors)"
                raise _Reject(400, detail) from err
        except _Reject as err:
            return _rejected(err)
        return await _answer(bot.on_github, payload)

    return app


async def _read(request: Request, limit: int, deadline_s: float) -> bytes:
    """The body: 413 past `limit` bytes (by header or while streaming), 408 when it has not
    all arrived within `deadline_s`."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise _Reject(413, f"body over {limit} bytes")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(deadline_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _Reject(413, f"body over {limit} bytes")
                chunks.append(chunk)
    except TimeoutError as err:
        raise _Reject(408, f"body not received within {deadline_s:g} s") from err
    return b"".join(chunks)


def _rejected(err: _Reject) -> JSONResponse:
    # the body may not have been read (all of it): the connection cannot serve another request
    headers = {"Connection": "close"}
    return JSONResponse({"error": err.detail}, status_code=err.status, headers=headers)


Answer = tuple[int, dict[str, Any]]


async def _answer(handle: Callable[[Any], Answer], payload: Any) -> JSONResponse:
    """Run `handle` off the event loop; bot.db or the queue being unavailable is a 503 whose
    body says why (the sender may redeliver), logged in one line."""
    try:
        status, answer = await run_in_threadpool(handle, payload)
    except OUTAGES as err:
        reason = " ".join(str(err).split())
        log.error("delivery answered 503: %s", reason)
        return JSONResponse({"error": f"temporarily unavailable: {reason}"}, status_code=503)
    return JSONResponse(answer, status_code=status)


def _ignored(reason: str) -> Answer:
    return 200, {"status": "ignored", "reason": reason}


def _parsed(
    parse: Callable[[str, str], Command | None], text: str, handle: str
) -> Command | CommandError | None:
    """The command in `text`, the error to reply with, or None when there is none."""
    try:
        return parse(text, handle)
    except CommandError as err:
        return err


@dataclass(frozen=True)
class _Comment:
    """A comment that holds a command, as either door hands it over."""

    delivery: str  # `hub:<comment id>` / `github:<comment id>`: dedupe; what budgets are spent by
    target: dict[str, Any]  # where the replies go
    sender: str  # whose budgets: `hub:<author id>` / `gh:<login>`
    origin: Origin
    read_as: ReadAs  # whose access to the source is checked (pipeline.admission.ReadAs)
    requester: Callable[[], str]  # the name jobs show (a Hub name is looked up)


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
        repo_id, num, author = p.repo.name, discussion.num, comment.author.id
        if self.settings.allow and repo_id.split("/")[0] not in self.settings.allow:
            return _ignored("namespace not on the allow-list")
        command = _parsed(parse_mention, comment.content or "", self.handle)
        if command is None:
            return _ignored("no mention of the bot")
        incoming = _Comment(
            delivery=f"hub:{comment.id}",
            target=hub_target(repo_id, num),
            sender=f"hub:{author}",
            origin="hub-mention",
            # only members see a private repo's discussions: the bot vouches for the author
            read_as=None if p.repo.private else False,
            requester=lambda: self.hub.author_name(repo_id, num, comment.id, author),
        )
        return self._once(incoming, repo_id, command)

    def on_github(self, event: IssueCommentEvent) -> Answer:
        if event.action != "created":
            return _ignored(f"action {event.action}")
        user = event.comment.user
        if user.type == "Bot":
            return _ignored("a bot's comment")
        command = _parsed(parse_github, event.comment.body or "", self.handle)
        if command is None:
            return _ignored("no /convert command")
        source = command.source if isinstance(command, Command) else None
        incoming = _Comment(
            delivery=f"github:{event.comment.id}",
            target=github_target(event.repository.full_name, event.issue.number),
            sender=f"gh:{user.login}",
            origin="github",
            read_as=self._github_reader(user.login, source),
            requester=lambda: f"gh:{user.login}",
        )
        return self._once(incoming, source, command)

    def _github_reader(self, login: str, source: str | None) -> ReadAs:
        """Public repos for anyone (anonymous); a private repo only for a user mapped to its
        namespace (`github_users`), read with the bot's own token."""
        namespaces = self.settings.github_users.get(login.lower(), frozenset())
        return None if source and source.split("/")[0] in namespaces else False

    def _once(
        self, comment: _Comment, repo_id: str | None, command: Command | CommandError
    ) -> Answer:
        """Handle a comment once: a redelivered comment id gets 200 and nothing else."""
        if not self.store.claim(comment.delivery):
            return 200, {"status": "duplicate"}
        try:
            answer = self._handle(comment, repo_id, command)
        except Exception:
            self.store.release(comment.delivery)  # nothing was done: let the sender retry
            raise
        self.notifier.wake()
        return answer

    def _handle(
        self, comment: _Comment, repo_id: str | None, command: Command | CommandError
    ) -> Answer:
        s = self.settings
        flood = {f"replies:{comment.sender}": s.reply_rate}
        if over := self.store.spend(comment.delivery, flood, s.rate_window_s):
            return self._limited(comment, over, s.reply_rate, "commands")
        if isinstance(command, CommandError):
            return self._reply(comment, str(command), "replied", "malformed command")
        if command.action == "help":
            return self._reply(comment, usage(self.handle), "replied")
        source = command.source or repo_id
        assert source is not None
        if s.allow and source.split("/")[0] not in s.allow:
            text = f"This bot converts models of {', '.join(s.allow)} only."
            return self._reply(comment, text, "refused", "namespace not on the allow-list")
        if command.action == "status":
            jobs = [j for j in self.queue.recent(200) if j.request.source == source]
            return self._reply(comment, status_text(jobs, source), "replied")
        return self._convert(comment, source, command)

    def _convert(self, comment: _Comment, source: str, command: Command) -> Answer:
        """Validate, spend the conversion budgets, submit; a refusal gives the budgets back."""
        s = self.settings
        try:
            check_repo_id(source, self.handle)
            request = ConversionRequest(
                source=source,
                eps=command.eps,
                dtypes=command.dtypes,
                revision=command.revision,
                publish=command.publish,
                requester=comment.requester(),
                origin=comment.origin,
                features=command.features,
                release=command.release,
                max_seq_len=command.max_seq_len,
            )
        except CommandError as err:
            return self._reply(comment, str(err), "replied", "bad repo id")
        except BadRequest as err:
            return self._reply(comment, f"I cannot convert that: {err}", "refused", str(err))
        budgets = {f"user:{comment.sender}": s.user_rate, f"repo:{source}": s.repo_rate}
        if over := self.store.spend(comment.delivery, budgets, s.rate_window_s):
            limit = budgets[over]
            return self._limited(comment, over, limit, "conversions")
        submitted = time.time()
        try:
            job_id = self.queue.submit(request, read_as=comment.read_as)
            job = self.queue.get(job_id)
        except JobRefused as err:
            self.store.refund(comment.delivery, list(budgets))
            return self._reply(comment, f"I cannot convert that: {err}", "refused", str(err))
        fresh = job.created_at >= submitted
        if not fresh:  # an existing job answers: no new conversion, nothing spent
            self.store.refund(comment.delivery, list(budgets))
        if not fresh and job.state in ("succeeded", "failed"):
            self.store.owe(comment.target, job_id, None)  # converted before: the result, at once
        else:
            self.store.owe(comment.target, job_id, ack_text(job_id, command.describe(), not fresh))
        return 202, {"status": "queued", "job": job_id}

    def _reply(self, comment: _Comment, text: str, status: str, reason: str = "") -> Answer:
        self.store.owe(comment.target, None, text)
        return 202, {"status": status, **({"reason": reason} if reason else {})}

    def _limited(self, comment: _Comment, scope: str, limit: int, what: str) -> Answer:
        """Past a budget: say so once per window to this sender, then stay quiet."""
        s = self.settings
        told = {f"told:{comment.sender}:{scope}": 1}
        if self.store.spend(comment.delivery, told, s.rate_window_s) is None:
            kind = {"replies": "your", "user": "your", "repo": "this repo's"}[scope.split(":")[0]]
            minutes = f"{s.rate_window_s / 60:g} minutes"
            text = f"Too many {what} ({kind} limit: {limit} per {minutes}); try again later."
            self.store.owe(comment.target, None, text)
        return 200, {"status": "rate-limited", "scope": scope}

"""Where replies go (Hub discussions, GitHub issues), what they say, and the `Notifier` thread
that posts every owed reply: the ack right away, the result once the job has finished.

The notifier polls the job queue (SQLite or Redis) for the jobs it owes results for, so workers
need no knowledge of the bot and may run anywhere; owed replies live in the bot store and
survive a restart. Only failed posts count towards giving up on a reply: while the queue or
bot.db cannot be read, the notifier waits (with backoff) and delivers once they are back.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

import github3
import httpx2
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

from bot.store import OUTAGES, BotStore, Reply
from converter.validate.report import component_diffs
from pipeline.jobs import Job, JobNotFound, JobQueue

MAX_FAILURES = 5  # failed posts of one reply before it is given up
MAX_WAIT_S = 60.0  # the longest pause between passes while the queue or bot.db is down
MAX_NAMES = 10_000  # Hub author ids -> names remembered
log = logging.getLogger("mobius.bot")


class HubReplies:
    """Comments on Hub discussions with the bot's token; knows the bot's own user id."""

    def __init__(self, token: str | None, endpoint: str | None = None) -> None:
        self.api = HfApi(token=token, endpoint=endpoint)
        self._me: dict[str, Any] | None = None
        self._names: dict[str, str] = {}
        self._lock = threading.Lock()

    def me(self) -> dict[str, Any]:
        """`whoami`, cached after the first success."""
        with self._lock:
            if self._me is None:
                self._me = self.api.whoami()
            return self._me

    def author_name(self, repo_id: str, num: int, comment_id: str, author_id: str) -> str:
        """The user name of a comment's author (webhooks carry only ids), from the discussion's
        events; remembered per author id. `hub:<id>` when the Hub cannot tell."""
        with self._lock:
            if author_id in self._names:
                return self._names[author_id]
        try:
            events = self.api.get_discussion_details(repo_id, num).events
        except (HfHubHTTPError, httpx2.TransportError) as err:
            log.warning("cannot read %s#%s for the name of %s: %s", repo_id, num, author_id, err)
            return f"hub:{author_id}"
        name = next((e.author for e in events if e.id == comment_id), None)
        if name is None:
            return f"hub:{author_id}"
        with self._lock:
            if len(self._names) >= MAX_NAMES:
                self._names.clear()
            self._names[author_id] = name
        return name

    def post(self, repo_id: str, num: int, text: str) -> None:
        self.api.comment_discussion(repo_id, num, text)


class GitHubReplies:
    """Comments on GitHub issues through github3.py; `url` is the web root of GitHub Enterprise
    (its API is `url/api/v3`), or https://github.com."""

    def __init__(self, token: str, url: str = "https://github.com") -> None:
        if url.rstrip("/") in ("https://github.com", "https://api.github.com"):
            self.gh: github3.GitHub = github3.GitHub(token=token)
        else:
            self.gh = github3.GitHubEnterprise(url, token=token)

    def post(self, repo: str, number: int, text: str) -> None:
        owner, name = repo.split("/", 1)
        issue = self.gh.issue(owner, name, number)
        if issue is None:
            raise LookupError(f"GitHub issue {repo}#{number} not found")
        issue.create_comment(text)


class Poster(Protocol):
    def __call__(self, target: dict[str, Any], text: str) -> None: ...


def hub_target(repo_id: str, num: int) -> dict[str, Any]:
    return {"kind": "hub", "repo": repo_id, "num": num}


def github_target(repo: str, number: int) -> dict[str, Any]:
    return {"kind": "github", "repo": repo, "num": number}


def make_poster(hub: HubReplies | None, github: GitHubReplies | None) -> Poster:
    def post(target: dict[str, Any], text: str) -> None:
        client = hub if target["kind"] == "hub" else github
        if client is None:
            raise RuntimeError(f"no client for {target['kind']} replies")
        client.post(target["repo"], int(target["num"]), text)

    return post


# -- what replies say ------------------------------------------------------------------------
def ack_text(job_id: str, what: str, again: bool = False) -> str:
    state = "is already queued or running" if again else "is queued"
    return (
        f"Conversion job `{job_id}` {state}: {what}. I will reply here with the results "
        "when it finishes."
    )


def result_text(job: Job) -> str:
    """The final reply: the PR/repo link and the validation table, or the failure paragraph."""
    if job.state == "failed":
        return f"Conversion job `{job.id}` failed: {job.error or 'no reason recorded'}"
    result = job.result or {}
    link = result.get("url")
    head = f"Conversion job `{job.id}` finished"
    head += f": {link}" if link else "."
    if result.get("message"):
        head += f"\n\n{result['message']}"
    return f"{head}\n\n{validation_table(result.get('reports') or {})}".rstrip()


def validation_table(reports: dict[str, dict[str, Any]]) -> str:
    if not reports:
        return ""
    rows = [
        "| variant | status | reference | max abs diff | top-1 agreement | tokens/s | components |",
        "|---|---|---|---|---|---|---|",
    ]
    for folder, r in sorted(reports.items()):
        rows.append(
            f"| `{folder}` | {r.get('status', '?')} | {r.get('reference') or '-'} | "
            f"{_num(r.get('max_abs_diff'), '.2e')} | {_num(r.get('top1_agreement'), '.3f')} | "
            f"{_num(r.get('tokens_per_second'), '.1f')} | {component_diffs(r) or '-'} |"
        )
    return "\n".join(rows)


def status_text(jobs: list[Job], repo_id: str) -> str:
    if not jobs:
        return f"No conversion jobs for `{repo_id}` yet."
    lines = [f"Recent conversion jobs for `{repo_id}`:", ""]
    for job in jobs[:10]:
        outcome = job.error or (job.result or {}).get("url") or job.waiting or ""
        variants = ", ".join(job.request.variants)
        lines.append(f"- `{job.id}` {job.state}: {variants}{' - ' + outcome if outcome else ''}")
    return "\n".join(lines)


def _num(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


# -- delivery ----------------------------------------------------------------------------------
class Notifier:
    """One thread posts every owed reply in order: ack first, result when the job is done.
    `wake()` after recording a reply; otherwise it polls every `poll_s` seconds. A failed post
    is retried after `retry_s`, doubling, and given up after `MAX_FAILURES`; a pass that cannot
    read the queue or bot.db gives up nothing and is retried after `retry_s`, doubling up to
    `MAX_WAIT_S`."""

    def __init__(
        self,
        store: BotStore,
        queue: JobQueue,
        post: Poster,
        poll_s: float = 1.0,
        retry_s: float = 2.0,
    ) -> None:
        self.store, self.queue, self.post = store, queue, post
        self.poll_s, self.retry_s = poll_s, retry_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="mobius-bot-replies", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        wait = self.poll_s
        while not self._stop.is_set():
            self._wake.wait(wait)
            self._wake.clear()
            try:
                self.flush()
                wait = self.poll_s
            except Exception as err:
                wait = min(MAX_WAIT_S, max(self.retry_s, 2 * wait))
                if isinstance(err, OUTAGES):
                    log.warning("replies wait %.0f s: %s", wait, " ".join(str(err).split()))
                else:
                    log.exception("delivering replies failed; retrying in %.0f s", wait)

    def flush(self) -> None:
        """One pass over the owed replies; raises (giving up nothing) when the queue or bot.db
        cannot be read."""
        for reply in self.store.open_replies():
            if self._stop.is_set():
                return
            self._advance(reply)

    def _advance(self, reply: Reply) -> None:
        if reply.ack and not reply.acked:
            if not self._post(reply, reply.ack):
                return
            self.store.mark(reply.id, acked=True)
        if reply.job_id is None:
            self.store.mark(reply.id, done=True)
            return
        try:
            job = self.queue.get(reply.job_id)
        except JobNotFound:
            self.store.mark(reply.id, done=True)
            return
        if job.state in ("succeeded", "failed") and self._post(reply, result_text(job)):
            self.store.mark(reply.id, done=True)

    def _post(self, reply: Reply, text: str) -> bool:
        """Post `text`; a failure is counted against the reply (given up after MAX_FAILURES)."""
        try:
            self.post(reply.target, text)
        except Exception as err:
            failures = self.store.failed(reply.id, self.retry_s)
            log.warning("reply %s to %s failed (%s): %s", reply.id, reply.target, failures, err)
            if failures >= MAX_FAILURES:
                log.error("reply %s given up after %s failures", reply.id, failures)
                self.store.mark(reply.id, done=True)
            return False
        return True

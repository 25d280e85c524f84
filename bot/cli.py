"""`mobius bot`: serve the Hub and GitHub webhooks, with an in-process worker unless
`--no-worker` (then `mobius worker` processes serve the shared queue). See docs/bot.md."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from pathlib import Path

from converter.errors import MobiusError
from pipeline.cli import add_queue_args

LOG_LEVELS = ("debug", "info", "warning", "error")
# One line per HTTP request (the Hub and GitHub clients): shown only with --log-level debug.
CHATTY = ("httpx", "httpx2", "httpcore", "httpcore2", "urllib3", "github3")


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `bot` subcommand to the `mobius` parser."""
    p = subparsers.add_parser("bot", help="serve the Hub/GitHub webhooks that request conversions")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    add_queue_args(p)
    p.add_argument(
        "--no-worker", action="store_true", help="only enqueue; `mobius worker`s run the jobs"
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="default info; debug adds a line per HTTP request received or made",
    )
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    import redis
    import uvicorn

    from bot import server
    from bot.app import Settings, create_app
    from bot.replies import GitHubReplies, HubReplies

    debug = args.log_level == "debug"
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(name)s: %(message)s", force=True
    )
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.WARNING)
    try:
        token = os.environ.get("HF_TOKEN")
        if not token:
            raise MobiusError(
                "set HF_TOKEN: the bot account's Hub token (it reads the repos, comments and "
                "opens pull requests)"
            )
        from pipeline.jobs import DEFAULT_RUNNER, JobQueue  # the queue loads only when serving

        queue = JobQueue(args.data_dir, args.redis_url, runner=DEFAULT_RUNNER)
        folder = queue.data_dir or Path(
            args.data_dir or os.environ.get("MOBIUS_DATA_DIR") or "~/.cache/mobius/bot"
        )
        settings = Settings.from_env(Path(folder).expanduser() / "bot.db")
        hub = HubReplies(token)
        github = None
        if settings.github_secret:
            github_token = os.environ.get("GITHUB_TOKEN")
            if not github_token:
                raise MobiusError("GITHUB_WEBHOOK_SECRET is set but GITHUB_TOKEN is not")
            url = os.environ.get("GITHUB_URL", "https://github.com")
            github = GitHubReplies(github_token, url)
        app = create_app(queue, hub, github, settings)
        config = server.config(
            app,
            args.host,
            args.port,
            read_timeout_s=settings.read_timeout_s,
            log_level=args.log_level,
            access_log=debug,
        )
        worker = contextlib.nullcontext() if args.no_worker else queue.worker()
        with worker:
            uvicorn.Server(config).run()
    except (MobiusError, ValueError) as err:
        print(f"mobius bot: {err}", file=sys.stderr)
        return 2
    except redis.RedisError as err:
        print(f"mobius bot: the job queue (Redis) cannot be used: {err}", file=sys.stderr)
        return 2
    return 0

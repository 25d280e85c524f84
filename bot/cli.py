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


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `bot` subcommand to the `mobius` parser."""
    p = subparsers.add_parser("bot", help="serve the Hub/GitHub webhooks that request conversions")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    add_queue_args(p)
    p.add_argument(
        "--no-worker", action="store_true", help="only enqueue; `mobius worker`s run the jobs"
    )
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from bot.app import Settings, create_app
    from bot.replies import GitHubReplies, HubReplies

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        from pipeline.jobs import DEFAULT_RUNNER, JobQueue  # the queue loads only when serving

        queue = JobQueue(args.data_dir, args.redis_url, runner=DEFAULT_RUNNER)
        folder = queue.data_dir or Path(
            args.data_dir or os.environ.get("MOBIUS_DATA_DIR") or "~/.cache/mobius/bot"
        )
        settings = Settings.from_env(Path(folder).expanduser() / "bot.db")
        hub = HubReplies(os.environ.get("HF_TOKEN") or None)
        github = None
        if settings.github_secret:
            token = os.environ.get("GITHUB_TOKEN")
            if not token:
                raise MobiusError("GITHUB_WEBHOOK_SECRET is set but GITHUB_TOKEN is not")
            github = GitHubReplies(token, os.environ.get("GITHUB_URL", "https://github.com"))
        app = create_app(queue, hub, github, settings)
        worker = contextlib.nullcontext() if args.no_worker else queue.worker()
        with worker:
            uvicorn.run(app, host=args.host, port=args.port)
    except (MobiusError, ValueError) as err:
        print(f"mobius bot: {err}", file=sys.stderr)
        return 2
    return 0

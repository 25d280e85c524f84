"""`mobius space`: the Gradio app with, by default, an in-process worker. Wired into the
`mobius` command by `mobius/cli.py` through `register`."""

from __future__ import annotations

import argparse

from converter.errors import MobiusError
from pipeline.cli import add_queue_args


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `space` subcommand to the `mobius` parser."""
    s = subparsers.add_parser("space", help="run the conversion web app (Gradio)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    add_queue_args(s)
    s.add_argument(
        "--no-worker",
        action="store_true",
        help="only submit jobs; `mobius worker` processes run them",
    )
    s.set_defaults(handler=space_command)
    return s


def space_command(args: argparse.Namespace) -> int:
    """Serve the app until interrupted."""
    from pipeline.jobs import JobQueue
    from space_app.app import serve  # imports gradio: only for this command

    try:
        queue = JobQueue(args.data_dir, args.redis_url)
        serve(args.host, args.port, queue, worker=not args.no_worker)
    except (MobiusError, OSError) as err:
        print(f"mobius space: {err}")
        return 1
    return 0

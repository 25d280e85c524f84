"""`mobius convert`: build every (ep, dtype) variant, validate each, write the card, publish.

The output folder mirrors the Hub layout: `DIR/onnx/<ep>-<dtype>/` per variant, the card at
`DIR/onnx/README.md` (PR layout, also used with `--publish none`) or `DIR/README.md` (repo
layout), and for `default` variants the Transformers.js files (`DIR/onnx/model*.onnx`, and
outside PR mode `DIR/config.json` and the tokenizer). Wired into the `mobius` command by
`mobius/cli.py` through `register`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from converter.errors import MobiusError
from pipeline.memory import parse_size
from pipeline.request import PUBLISH as MODES
from pipeline.request import ConversionRequest

# The heavy modules (converter build, queue, Hub client) load inside the handlers, so
# `mobius build` does not pay for them.


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `convert` subcommand to the `mobius` parser."""
    c = subparsers.add_parser(
        "convert", help="build variants, validate them, write the card, optionally publish"
    )
    c.add_argument("model", metavar="ID_OR_DIR", help="Hub repo id or local folder")
    c.add_argument("--ep", default="cpu", type=_csv, help="execution providers, e.g. cpu,cuda")
    c.add_argument("--dtype", default="f32", type=_csv, help="dtypes, e.g. f32,int4")
    c.add_argument("--output", required=True, type=Path, help="folder to write everything to")
    c.add_argument(
        "--features",
        action="append",
        default=[],
        metavar="A,B",
        help="build features for every variant, comma-separated or repeated (as mobius build)",
    )
    c.add_argument(
        "--max-seq-len", type=int, help="with --features static-cache: its buffers' length"
    )
    c.add_argument("--release", action="store_true", help="as mobius build --release")
    c.add_argument("--revision", help="Hub branch, tag or commit (default: main)")
    c.add_argument("--publish", choices=MODES, default="none", help="deliver to the Hub")
    c.add_argument("--namespace", help="with --publish repo: user or org (default: yours)")
    c.add_argument("--private", action="store_true", help="with --publish repo: a private repo")
    c.add_argument(
        "--force", action="store_true", help="open a new PR even if one was closed before"
    )
    c.add_argument(
        "--token-env",
        default="HF_TOKEN",
        metavar="VAR",
        help="environment variable holding the Hub token (default: HF_TOKEN)",
    )
    c.add_argument(
        "--reference",
        default="auto",
        choices=("auto", "transformers", "default"),
        help="validate against transformers, or the default f32 variant built on the fly",
    )
    c.add_argument("--no-progress", action="store_true", help="hide progress bars")
    c.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON on stdout (progress goes to stderr)",
    )
    c.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    c.set_defaults(handler=run)
    register_queue_commands(subparsers)
    return c


def register_queue_commands(subparsers: argparse._SubParsersAction) -> None:
    """`worker` and `jobs`."""
    w = subparsers.add_parser("worker", help="run queued conversion jobs until SIGINT/SIGTERM")
    add_queue_args(w)
    w.add_argument("--runner", help="job runner, module:function (default: the converter)")
    w.add_argument("--concurrency", type=int, default=1, help="jobs at once (default 1)")
    w.add_argument("--lease", type=float, help="seconds without heartbeat before a re-run")
    w.add_argument(
        "--max-memory",
        type=_size,
        metavar="SIZE",
        help="memory budget, e.g. 4GB: jobs whose estimated peak is over it are left queued",
    )
    w.set_defaults(handler=worker_command)
    j = subparsers.add_parser("jobs", help="recent jobs and their state, or one job as JSON")
    add_queue_args(j)
    j.add_argument("job_id", nargs="?", help="show this job with its progress and log")
    j.add_argument("--limit", type=int, default=20, help="how many jobs (default 20)")
    j.set_defaults(handler=jobs_command)


def add_queue_args(parser: argparse.ArgumentParser) -> None:
    """--data-dir / --redis-url: which queue a command serves (every front door has them)."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="embedded queue folder (default $MOBIUS_DATA_DIR or ~/.cache/mobius/jobs)",
    )
    parser.add_argument("--redis-url", help="shared Redis queue (default $MOBIUS_REDIS_URL)")


def worker_command(args: argparse.Namespace) -> int:
    """Run queued conversion jobs until SIGINT/SIGTERM."""
    import redis

    from pipeline.jobs import DEFAULT_LEASE_S, DEFAULT_RUNNER, JobQueue

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        queue = JobQueue(
            args.data_dir,
            args.redis_url,
            runner=args.runner or DEFAULT_RUNNER,
            lease_s=args.lease or DEFAULT_LEASE_S,
            max_memory=args.max_memory,
        )
        queue.run_worker(args.concurrency)
    except (MobiusError, redis.RedisError) as err:
        print(f"mobius worker: {err}", file=sys.stderr)
        return 2
    return 0


def jobs_command(args: argparse.Namespace) -> int:
    """List recent jobs and their state, or show one job in full (JSON)."""
    import redis

    from pipeline.jobs import JobQueue

    try:
        queue = JobQueue(args.data_dir, args.redis_url)
        if args.job_id:
            print(json.dumps(queue.get(args.job_id).to_dict(), indent=2))
            return 0
        jobs = queue.recent(args.limit)
    except (MobiusError, redis.RedisError) as err:
        print(f"mobius jobs: {err}", file=sys.stderr)
        return 1
    now = time.time()
    print(f"{'id':16}  {'state':9}  {'stage':8}  {'try':>3}  {'age':>5}  request / outcome")
    for job in jobs:
        r = job.request
        outcome = job.error or (job.result or {}).get("url") or job.waiting or ""
        print(
            f"{job.id:16}  {job.state:9}  {job.stage or '-':8}  {job.attempts:>3}  "
            f"{_age(now - job.created_at):>5}  {r.source} [{','.join(r.variants)}] -> "
            f"{r.publish} by {r.requester or '(cli)'}{'  ' + outcome if outcome else ''}"
        )
    return 0


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def run(args: argparse.Namespace) -> int:
    """Returns 1 when a variant failed validation (then nothing is published); raises
    MobiusError (PublishError included) for bad input and Hub failures."""
    token = os.environ.get(args.token_env) or None
    if args.publish != "none" and token is None:
        raise MobiusError(f"--publish {args.publish} needs a Hub token in ${args.token_env}")
    request = ConversionRequest(
        source=args.model,
        eps=args.ep,
        dtypes=args.dtype,
        revision=args.revision,
        publish=args.publish,
        namespace=args.namespace,
        private=args.private,
        requester=os.environ.get("USER", ""),
        origin="cli",
        features=tuple(args.features),
        release=args.release,
        max_seq_len=args.max_seq_len,
    )
    from pipeline.convert import convert

    variants = len(request.eps) * len(request.dtypes)
    reporter = _PrintReporter(variants, sys.stderr if args.json else sys.stdout)
    result = convert(
        request,
        reporter,
        output=args.output,
        token=token,
        reference=args.reference,
        force=args.force,
        progress=not args.no_progress,
    )
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        _print_summary(result.reports)
    return 1 if result.failed else 0


def _print_summary(reports: dict[str, dict]) -> None:
    from converter.validate import summarize

    names = {folder: folder.removeprefix("onnx/") for folder in reports}
    width = max(map(len, names.values()), default=0)
    for folder, report in reports.items():
        print(f"{names[folder]:<{width}}  {summarize(report)}")


class _PrintReporter:
    """Progress for a person at a terminal: `[i/n] variant: step` lines and the log."""

    def __init__(self, variants: int, stream: TextIO) -> None:
        self.variants, self.stream = variants, stream
        self.numbers: dict[str, int] = {}

    def stage(self, name: str) -> None:
        pass

    def progress(self, variant: str | None, percent: float, message: str = "") -> None:
        if variant is None:
            return
        number = self.numbers.setdefault(variant, len(self.numbers) + 1)
        self.log(f"[{number}/{self.variants}] {variant.removeprefix('onnx/')}: {message}")

    def log(self, line: str) -> None:
        print(line, file=self.stream, flush=True)


def _csv(text: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("give at least one value")
    return list(dict.fromkeys(items))


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except MobiusError as err:
        raise argparse.ArgumentTypeError(str(err)) from err

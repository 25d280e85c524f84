"""prune-prefill-prefix benchmark: prefill time of the Qwen2.5-0.5B-shaped checkpoint built
with and without the feature, at one prompt length, in onnxruntime.

Uses bench/convert.py's cached random bf16 checkpoint (generated on the first run), builds both
packages in this process, then times one prefill call (a [1, TOKENS] prompt, an empty cache)
of each package alternately, so a burst of other load on a shared machine lands on both; reports
each one's median and their ratio. See docs/build-features.md.

    python bench/prune_prefill.py [--ep cpu] [--dtype f32|int4] [--tokens 512] [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time

import numpy as np
from convert import CHECKPOINT_NAME, add_workdir, log, make_checkpoint, print_results

from converter import build
from converter.features import PRUNE_PREFILL
from converter.validate.runtime import OnnxDecoder

VARIANTS = {"full": [], "pruned": [PRUNE_PREFILL]}


def prefill_seconds(decoder: OnnxDecoder, tokens: int) -> float:
    """One prefill call: logits and presents of a [1, tokens] prompt."""
    ids = np.random.default_rng(0).integers(0, 512, size=(1, tokens))
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "position_ids": np.arange(tokens)[None],
        **decoder.empty_past(1),
    }
    started = time.perf_counter()
    decoder.session.run(decoder.outputs, feeds)
    return time.perf_counter() - started


def run_bench(args: argparse.Namespace) -> dict:
    source = make_checkpoint(args.workdir / CHECKPOINT_NAME)
    outputs = args.workdir / "prune-prefill-out"
    shutil.rmtree(outputs, ignore_errors=True)
    decoders = {}
    for name, features in VARIANTS.items():
        log(f"building the {name} {args.ep}/{args.dtype} package ...")
        package = build(
            str(source), ep=args.ep, dtype=args.dtype, features=features, progress=False
        )
        package.save(outputs / name, progress=False)
        del package
        decoders[name] = OnnxDecoder(outputs / name)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for decoder in decoders.values():  # a warm-up call each (allocations, first-run setup)
        prefill_seconds(decoder, args.tokens)
    for run in range(args.runs):
        for name, decoder in decoders.items():
            times[name].append(prefill_seconds(decoder, args.tokens))
        latest = ", ".join(f"{name} {t[-1]:.3f} s" for name, t in times.items())
        log(f"run {run + 1}/{args.runs}: {latest}")
    if not args.keep:
        del decoders
        shutil.rmtree(outputs, ignore_errors=True)
    medians = {name: statistics.median(t) for name, t in times.items()}
    return {
        "ep": args.ep,
        "dtype": args.dtype,
        "tokens": args.tokens,
        "runs": args.runs,
        "times_s": times,
        "median_s": medians,
        "speedup": medians["full"] / medians["pruned"],
    }


def table(results: dict) -> str:
    medians = results["median_s"]
    return "\n".join(
        [
            f"prefill of {results['tokens']} tokens, {results['ep']}/{results['dtype']}, "
            f"median of {results['runs']} alternated runs",
            f"  without {PRUNE_PREFILL}: {medians['full']:.3f} s",
            f"  with {PRUNE_PREFILL}:    {medians['pruned']:.3f} s",
            f"  speedup: {results['speedup']:.2f}x",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ep", default="cpu", help="the build's EP (default: %(default)s)")
    parser.add_argument("--dtype", default="f32", choices=("f32", "int4"))
    parser.add_argument("--tokens", type=int, default=512, help="prompt length")
    parser.add_argument("--runs", type=int, default=7, help="timed prefills of each package")
    add_workdir(parser)
    parser.add_argument("--keep", action="store_true", help="keep the two packages")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    return print_results(run_bench(args), table, args.json)


if __name__ == "__main__":
    sys.exit(main())

"""quantize_blocks alone: nanoseconds per value on Qwen2.5-0.5B-shaped bfloat16 weights (issue 16).

Two weights: an MLP projection (4864 x 896, 4-bit blocks of 32, as cpu/int4 quantizes the
transformer blocks) and the tied head (151936 x 896, 8-bit blocks of 32, the default head
bits), on 1 and 2 threads (converter.quantize._WORKERS); medians of --repeat. The baseline in
the same script is one pass over the weight: widening it to float32 (`astype`), which any
quantizer of these values does at least once.

    PYTHONPATH=. python bench/quantize_speed.py [--repeat 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial

import ml_dtypes
import numpy as np

from converter import quantize

SHAPES = {"mlp 4864x896 4-bit": ((4864, 896), 4), "head 151936x896 8-bit": ((151936, 896), 8)}


def median_ns_per_value(work, values: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e9 / values


def run(repeat: int) -> dict:
    rng = np.random.default_rng(0)
    results, workers = {}, quantize._WORKERS
    for name, (shape, bits) in SHAPES.items():
        w = (rng.standard_normal(shape, np.float32) * 0.02).astype(ml_dtypes.bfloat16)
        row = {"one_pass": median_ns_per_value(partial(w.astype, np.float32), w.size, repeat)}
        try:
            for threads in (1, 2):
                quantize._WORKERS = threads
                work = partial(quantize.quantize_blocks, w, 32, bits=bits)
                row[f"threads_{threads}"] = median_ns_per_value(work, w.size, repeat)
        finally:
            quantize._WORKERS = workers
        results[name] = row
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs; medians are reported")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    results = run(args.repeat)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for name, r in results.items():
        print(
            f"{name}: {r['threads_1']:.2f} ns/value on 1 thread "
            f"({r['threads_1'] / r['one_pass']:.1f}x one float32 pass, {r['one_pass']:.2f}), "
            f"{r['threads_2']:.2f} on 2"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

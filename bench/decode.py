"""Decode speed of two onnxruntime-genai packages, measured alternately in one process.

    python bench/decode.py PACKAGE_A PACKAGE_B [--rounds 2] [--tokens 64]

On a shared machine, alternating the packages round by round keeps a burst of other load
from landing on one of them only; each round reports the best of three generations.
"""

from __future__ import annotations

import argparse
import time

import onnxruntime_genai as og

PROMPT = list(range(100, 116))


def tokens_per_second(model: og.Model, new_tokens: int) -> float:
    best = 0.0
    for _ in range(3):
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(PROMPT) + new_tokens, do_sample=False)
        generator = og.Generator(model, params)
        generator.append_tokens(PROMPT)
        started, count = time.perf_counter(), 0
        while not generator.is_done():
            generator.generate_next_token()
            count += 1
        best = max(best, count / (time.perf_counter() - started))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    models = {path: og.Model(path) for path in args.packages}
    for round_ in range(1, args.rounds + 1):
        for path, model in models.items():
            rate = tokens_per_second(model, args.tokens)
            print(f"round {round_}: {rate:6.1f} tokens/s  {path}", flush=True)


if __name__ == "__main__":
    main()

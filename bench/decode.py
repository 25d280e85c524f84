"""Decode speed of onnxruntime-genai packages, measured alternately in one process.

    python bench/decode.py PACKAGE_A PACKAGE_B [PACKAGE_C ...] [--rounds 2] [--tokens 64]
        [--prompt-tokens 16]

On a shared machine, alternating the packages round by round keeps a burst of other load
from landing on one of them only; each round reports the best of three generations, and the
end each package's median over the rounds and its ratio to the first package's median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import onnxruntime_genai as og


def tokens_per_second(model: og.Model, prompt: list[int], new_tokens: int) -> float:
    best = 0.0
    for _ in range(3):
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(prompt) + new_tokens, do_sample=False)
        generator = og.Generator(model, params)
        generator.append_tokens(prompt)
        started, count = time.perf_counter(), 0
        while not generator.is_done():
            generator.generate_next_token()
            count += 1
        best = max(best, count / (time.perf_counter() - started))
    return best


def alternate(packages: list[str], rounds: int, tokens: int, prompt_tokens: int = 16) -> dict:
    """Each package's tokens/s per round (the best of three), the packages taken in turn."""
    models = {path: og.Model(str(path)) for path in packages}
    prompt = [100 + i % 1000 for i in range(prompt_tokens)]
    rates: dict[str, list[float]] = {path: [] for path in models}
    for round_ in range(1, rounds + 1):
        for path, model in models.items():
            rates[path].append(tokens_per_second(model, prompt, tokens))
            rate, load = rates[path][-1], os.getloadavg()[0]
            print(f"round {round_}: {rate:6.1f} tokens/s  load {load:.2f}  {path}", flush=True)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--prompt-tokens", type=int, default=16, help="context before decoding")
    args = parser.parse_args()
    rates = alternate(args.packages, args.rounds, args.tokens, args.prompt_tokens)
    first = statistics.median(rates[args.packages[0]])
    for path, values in rates.items():
        median = statistics.median(values)
        spread = f"{min(values):.1f}-{max(values):.1f}"
        print(f"median {median:6.1f} tokens/s ({spread}), {median / first:.2f}x  {path}")


if __name__ == "__main__":
    main()

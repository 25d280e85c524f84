"""int4 methods: round-to-nearest ("rtn") against the per-block scale search ("search").

(a) reconstruction error (relative Frobenius norm) on Gaussian and Student-t (3 degrees of
freedom, heavy-tailed) weights, symmetric and asymmetric blocks of 32; (b) quantization time of
a 4096x4096 float32 weight (best of --repeat) and its ratio to RTN's; (c) examples/tiny-llama
(trained) built cpu/int4 with each method: teacher-forced logits against the f32 build over a
prose prompt, mean cosine and top-1 agreement per position. Then the default rule: search
becomes the default if it lowers the symmetric (default) reconstruction error by at least 10% on
both weight kinds and costs at most 3x RTN's quantization time. See docs/validation.md.

    PYTHONPATH=. python bench/int4_method.py [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from converter import build
from converter.quantize import METHODS, quantize_blocks
from converter.validate.runtime import OnnxDecoder

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"
PROMPT = (
    "The rivers settled near rivers, because a river brings water to drink, fish to eat and a "
    "road for boats. Towns grew where two rivers met."
)
MIN_ERROR_DROP = 0.10  # the default rule: at least this much lower reconstruction error ...
MAX_TIME_RATIO = 3.0  # ... at no more than this multiple of RTN's quantization time


def weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    shape = (1024, 4096)
    return {
        "gaussian": rng.standard_normal(shape).astype(np.float32),
        "student-t": rng.standard_t(3, shape).astype(np.float32),
    }


def reconstruction(rng: np.random.Generator) -> dict:
    errors: dict = {}
    for kind, w in weights(rng).items():
        for symmetric in (True, False):
            row = {}
            for method in METHODS:
                restored = quantize_blocks(w, 32, symmetric, method=method).dequantize()
                row[method] = float(np.linalg.norm(restored - w) / np.linalg.norm(w))
            row["drop"] = 1 - row["search"] / row["rtn"]
            errors[f"{kind} {'symmetric' if symmetric else 'asymmetric'}"] = row
    return errors


def timing(rng: np.random.Generator, repeat: int) -> dict:
    w = rng.standard_normal((4096, 4096)).astype(np.float32)
    seconds: dict = {}
    for symmetric in (True, False):
        best = {}
        for method in METHODS:
            runs = []
            for _ in range(repeat):
                started = time.perf_counter()
                quantize_blocks(w, 32, symmetric, method=method)
                runs.append(time.perf_counter() - started)
            best[method] = min(runs)
        best["ratio"] = best["search"] / best["rtn"]
        seconds["symmetric" if symmetric else "asymmetric"] = best
    return seconds


def tiny_llama_logits(workdir: Path) -> dict:
    from tokenizers import Tokenizer

    ids = Tokenizer.from_file(str(TINY_LLAMA / "tokenizer.json")).encode(PROMPT).ids
    ids = np.array([ids], np.int64)
    logits = {}
    for name, options in [("f32", {"dtype": "f32"})] + [
        (method, {"dtype": "int4", "int4_method": method}) for method in METHODS
    ]:
        out = workdir / name
        build(str(TINY_LLAMA), ep="cpu", progress=False, **options).save(out, progress=False)
        logits[name] = OnnxDecoder(out).run(ids, np.ones_like(ids), [])[0][0]  # [positions, V]
    reference = logits.pop("f32")
    results = {"positions": int(ids.shape[1])}
    for method, got in logits.items():
        cosine = (got * reference).sum(-1) / (
            np.linalg.norm(got, axis=-1) * np.linalg.norm(reference, axis=-1)
        )
        top1 = (got.argmax(-1) == reference.argmax(-1)).mean()
        results[method] = {"mean_cosine": float(cosine.mean()), "top1": float(top1)}
    return results


def verdict(errors: dict, seconds: dict) -> dict:
    drop = min(errors[f"{kind} symmetric"]["drop"] for kind in ("gaussian", "student-t"))
    ratio = seconds["symmetric"]["ratio"]
    wins = drop >= MIN_ERROR_DROP and ratio <= MAX_TIME_RATIO
    return {"min_error_drop": drop, "time_ratio": ratio, "default": "search" if wins else "rtn"}


def report(results: dict) -> str:
    lines = ["reconstruction error (relative Frobenius, blocks of 32)      rtn   search  drop"]
    for label, row in results["errors"].items():
        lines.append(f"  {label:<24}{row['rtn']:>37.4f}{row['search']:>9.4f}{row['drop']:>6.1%}")
    lines.append("quantization time, 4096x4096 float32 (s)                    rtn   search  ratio")
    for label, row in results["seconds"].items():
        lines.append(f"  {label:<24}{row['rtn']:>37.3f}{row['search']:>9.3f}{row['ratio']:>6.1f}x")
    tiny = results["tiny_llama"]
    lines.append(f"tiny-llama cpu/int4 vs f32, teacher-forced ({tiny['positions']} positions)")
    for method in METHODS:
        row = tiny[method]
        lines.append(f"  {method:<8} mean cosine {row['mean_cosine']:.5f}  top-1 {row['top1']:.3f}")
    v = results["verdict"]
    lines.append(
        f"rule: error drop >= {MIN_ERROR_DROP:.0%} and time <= {MAX_TIME_RATIO:.0f}x RTN -> "
        f"drop {v['min_error_drop']:.1%}, time {v['time_ratio']:.1f}x: default {v['default']}"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timing runs; the fastest counts")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    results = {"errors": reconstruction(rng), "seconds": timing(rng, args.repeat)}
    with tempfile.TemporaryDirectory() as workdir:
        results["tiny_llama"] = tiny_llama_logits(Path(workdir))
    results["verdict"] = verdict(results["errors"], results["seconds"])
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

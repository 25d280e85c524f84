"""int4 quality and decode speed: mobius int4 (head bits 8, 4, float) vs the genai builder.

For each checkpoint (default: the trained examples/tiny-llama and bench/convert.py's random
Qwen2.5-0.5B-shaped one), builds the cpu int4 packages, runs each in plain onnxruntime on one
fixed token sequence with an empty cache and compares its logits, position by position, with
transformers f32 on the same weights (min and mean cosine, top-1 agreement). Then decodes with
mobius int4 (heads of 8 and 4 bits) and the builder's int4 on the last checkpoint in
onnxruntime-genai, the three alternated round by round in this process. See docs/validation.md.

    python bench/int4_quality.py [--checkpoint DIR ...] [--rounds 5] [--skip-decode] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from convert import (
    CHECKPOINT_NAME,
    GB,
    REPO,
    add_workdir,
    builder_cmd,
    log,
    make_checkpoint,
    mobius_cmd,
    print_results,
)
from decode import alternate
from int8 import package_bytes

TEXT = (
    "Once upon a time there was a little cat who lived in a small house near the river. "
    "Every morning the cat walked along the water and watched the boats go by, and every "
    "evening it came home to sleep by the warm fire."
)
SEQUENCE_LENGTH = 64
HEAD_BITS = ("8", "4", "float")
ORT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32}
ORT_TYPES["tensor(float16)"] = np.float16


def token_ids(checkpoint: Path) -> np.ndarray:
    from tokenizers import Tokenizer

    ids = Tokenizer.from_file(str(checkpoint / "tokenizer.json")).encode(TEXT).ids
    if len(ids) < SEQUENCE_LENGTH:
        raise SystemExit(f"the prompt is {len(ids)} tokens, fewer than {SEQUENCE_LENGTH}")
    return np.array([ids[:SEQUENCE_LENGTH]], np.int64)


def build(name: str, cmd: list[str], out: Path, logs: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    log(f"{name}: {' '.join(cmd)}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with (logs / f"{name}.log").open("w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=REPO, check=True)


def packages(checkpoint: Path, outputs: Path, logs: Path) -> dict[str, Path]:
    built = {}
    for bits in HEAD_BITS:
        out = outputs / f"mobius-head{bits}"
        build(out.name, mobius_cmd(checkpoint, out, "cpu", "int4", bits), out, logs)
        built[f"mobius int4, head {bits}"] = out
    out, cache = outputs / "builder", outputs / "builder.cache"
    build(out.name, builder_cmd(checkpoint, out, "int4", cache), out, logs)
    shutil.rmtree(cache, ignore_errors=True)
    built["builder int4"] = out
    return built


def reference_logits(checkpoint: Path, ids: np.ndarray) -> np.ndarray:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    with torch.no_grad():
        logits = model(torch.from_numpy(ids)).logits[0].numpy()
    del model
    return logits


def onnx_logits(package: Path, ids: np.ndarray) -> np.ndarray:
    """Teacher-forced logits: the whole sequence at once, every cache input empty."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(package / "model.onnx"), providers=["CPUExecutionProvider"])
    length = ids.shape[1]
    decoder = json.loads((package / "genai_config.json").read_text())["model"]["decoder"]
    # The symbolic dims of a cache input: batch, past length (empty), head size.
    fill = {0: 1, 2: 0, 3: decoder["head_size"]}
    feeds = {}
    for arg in session.get_inputs():
        dtype = ORT_TYPES[arg.type]
        if arg.name == "input_ids":
            feeds[arg.name] = ids.astype(dtype)
        elif arg.name == "attention_mask":
            feeds[arg.name] = np.ones((1, length), dtype)
        elif arg.name == "position_ids":
            feeds[arg.name] = np.arange(length, dtype=dtype)[None]
        elif arg.name.startswith("past_key_values."):
            shape = [d if isinstance(d, int) else fill[i] for i, d in enumerate(arg.shape)]
            feeds[arg.name] = np.zeros(shape, dtype)
        else:
            raise SystemExit(f"{package.name}: unexpected input {arg.name}")
    return session.run(["logits"], feeds)[0][0].astype(np.float32)


def compare(logits: np.ndarray, reference: np.ndarray) -> dict:
    a, b = logits.astype(np.float64), reference.astype(np.float64)
    cosine = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return {
        "min_cosine": float(cosine.min()),
        "mean_cosine": float(cosine.mean()),
        "top1_agreement": float((a.argmax(-1) == b.argmax(-1)).mean()),
        "max_abs_diff": float(np.abs(a - b).max()),
    }


def quality(checkpoint: Path, outputs: Path, logs: Path) -> tuple[dict, dict[str, Path]]:
    built = packages(checkpoint, outputs, logs)
    ids = token_ids(checkpoint)
    reference = reference_logits(checkpoint, ids)
    rows = {}
    for name, package in built.items():
        rows[name] = {**compare(onnx_logits(package, ids), reference)}
        rows[name]["package_bytes"] = package_bytes(package)
        log(f"{checkpoint.name} {name}: {rows[name]}")
    return rows, built


def alternated_decode(packages: dict[str, Path], rounds: int, tokens: int) -> dict:
    """Each package's tokens/s in onnxruntime-genai, the packages alternated round by round
    (bench/decode.py); ratios to the builder's median."""
    rates = alternate([str(p) for p in packages.values()], rounds, tokens)
    by_name = {name: rates[str(path)] for name, path in packages.items()}
    medians = {name: statistics.median(r) for name, r in by_name.items()}
    return {
        "tokens": tokens,
        "rounds_tokens_per_s": by_name,
        "median_tokens_per_s": medians,
        "ratio_to_builder": {n: m / medians["builder int4"] for n, m in medians.items()},
    }


def run_bench(args: argparse.Namespace) -> dict:
    checkpoints = args.checkpoint or [
        REPO / "examples" / "tiny-llama",
        make_checkpoint(args.workdir / CHECKPOINT_NAME),
    ]
    logs = args.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    results: dict = {"sequence_length": SEQUENCE_LENGTH, "checkpoints": {}}
    for checkpoint in checkpoints:
        outputs = args.workdir / "int4-quality-out" / checkpoint.name
        rows, built = quality(checkpoint, outputs, logs)
        results["checkpoints"][checkpoint.name] = rows
        if checkpoint == checkpoints[-1] and not args.skip_decode:
            timed = {n: p for n, p in built.items() if "float" not in n}  # the head's cost
            results["decode"] = {
                "checkpoint": checkpoint.name,
                **alternated_decode(timed, args.rounds, args.tokens),
            }
        if not args.keep:
            shutil.rmtree(outputs, ignore_errors=True)
    return results


def table(results: dict) -> str:
    fmt = "{:<22}{:>11}{:>12}{:>7}{:>10}{:>10}"
    lines = []
    for checkpoint, rows in results["checkpoints"].items():
        lines += [f"{checkpoint}, {results['sequence_length']} tokens teacher-forced vs f32:"]
        lines.append(fmt.format("", "min cos", "mean cos", "top-1", "max|d|", "MB"))
        for name, r in rows.items():
            cells = [f"{r['min_cosine']:.5f}", f"{r['mean_cosine']:.5f}"]
            cells += [f"{r['top1_agreement']:.3f}", f"{r['max_abs_diff']:.3f}"]
            lines.append(fmt.format(name, *cells, f"{r['package_bytes'] / GB * 1e3:.1f}"))
    if "decode" in results:
        d = results["decode"]
        lines.append(f"decode, {d['checkpoint']}, {d['tokens']} new tokens, alternated rounds:")
        for name, rates in d["rounds_tokens_per_s"].items():
            median = d["median_tokens_per_s"][name]
            lines.append(
                f"  {name:<22} median {median:.1f} tokens/s "
                f"({d['ratio_to_builder'][name]:.2f}x the builder's), "
                f"range {min(rates):.1f}-{max(rates):.1f} over {len(rates)} rounds"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpoint", type=Path, action="append", help="checkpoint folder (repeatable)"
    )
    add_workdir(parser)
    parser.add_argument("--rounds", type=int, default=5, help="alternated decode rounds")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per generation")
    parser.add_argument("--skip-decode", action="store_true", help="skip the decode tokens/s")
    parser.add_argument("--keep", action="store_true", help="keep the converted packages")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    return print_results(run_bench(args), table, args.json)


if __name__ == "__main__":
    sys.exit(main())

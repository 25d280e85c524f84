"""int8 benchmark: mobius f32, int8 and int4 packages of the Qwen2.5-0.5B-shaped checkpoint.

Uses bench/convert.py's cached random bf16 checkpoint and its measurement: each conversion in
its own subprocess with the checkpoint evicted from the page cache first (wall time, CPU time,
peak RSS), then each package's size and its greedy decode tokens/s in onnxruntime-genai. See
docs/benchmarks.md.

    python bench/int8.py [--ep cpu] [--repeat N] [--skip-decode] [--json]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from convert import (
    CHECKPOINT_NAME,
    GB,
    PROMPT,
    add_workdir,
    decode,
    log,
    make_checkpoint,
    measure,
    mobius_cmd,
    print_results,
)

DTYPES = ("f32", "int8", "int4")


def package_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.name.startswith("model.onnx"))


def run_bench(args: argparse.Namespace) -> dict:
    source = make_checkpoint(args.workdir / CHECKPOINT_NAME)
    files = sorted(source.glob("*.safetensors"))
    outputs, logs = args.workdir / "int8-out", args.workdir / "logs"
    shutil.rmtree(outputs, ignore_errors=True)
    logs.mkdir(parents=True, exist_ok=True)
    results: dict = {"ep": args.ep, "checkpoint_bytes": sum(f.stat().st_size for f in files)}
    for dtype in DTYPES:
        out = outputs / dtype
        cmd = mobius_cmd(source, out, args.ep, dtype)
        runs = [measure(f"mobius-{dtype}", cmd, [out], files, logs) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: (not r["ok"], r["wall_s"]))
        results[dtype] = {**best, "walls_s": [r["wall_s"] for r in runs]}
        if best["ok"]:
            results[dtype]["package_bytes"] = package_bytes(out)
    if not args.skip_decode:
        from tokenizers import Tokenizer

        prompt = Tokenizer.from_file(str(source / "tokenizer.json")).encode(PROMPT).ids
        for dtype in DTYPES:
            if results[dtype]["ok"]:
                log(f"decoding with the {dtype} package ...")
                results[dtype]["decode"] = decode(outputs / dtype, prompt, args.repeat)
    if not args.keep:
        shutil.rmtree(outputs, ignore_errors=True)
    return results


def table(results: dict) -> str:
    rows = [
        ("convert wall (s)", lambda r: r["wall_s"]),
        ("convert CPU (s)", lambda r: r["cpu_s"]),
        ("convert peak RSS (GB)", lambda r: r["peak_rss_gb"]),
        ("package (GB)", lambda r: r["package_bytes"] / GB),
        ("decode (tokens/s)", lambda r: r["decode"]["tokens_per_s"] if "decode" in r else None),
    ]
    fmt = "{:<24}" + "{:>9}" * len(DTYPES)
    lines = [fmt.format(f"mobius --ep {results['ep']}", *DTYPES)]
    for label, pick in rows:
        cells = []
        for dtype in DTYPES:
            entry = results[dtype]
            value = pick(entry) if entry["ok"] else None
            cells.append(f"{value:.2f}" if value is not None else "n/a")
        lines.append(fmt.format(label, *cells))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ep", default="cpu", help="mobius --ep (default: %(default)s)")
    parser.add_argument("--skip-decode", action="store_true", help="skip the decode tokens/s")
    add_workdir(parser)
    parser.add_argument("--keep", action="store_true", help="keep the converted packages")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per conversion; the fastest is reported"
    )
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    return print_results(run_bench(args), table, args.json)


if __name__ == "__main__":
    sys.exit(main())

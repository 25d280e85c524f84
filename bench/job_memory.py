"""A conversion job's peak memory against the queue's estimate (`pipeline.memory`).

Runs `mobius convert` (what a worker runs: build, then validate against transformers; nothing
published) on examples/tiny-llama and on a random-weight bf16 Qwen2 checkpoint with 4 layers of
Qwen2.5-0.5B's shape (0.39 GB, bench/convert.py's generator), once per dtype, and prints each
child's peak RSS (wait4) beside `estimate_peak` for the same checkpoint bytes and dtype. The
constants in pipeline/memory.py come from these figures; see docs/jobs.md.

    python bench/job_memory.py [--dtype f32,f16,int4] [--workdir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from convert import CONFIG, make_checkpoint, measure  # noqa: E402

from pipeline.memory import estimate_peak  # noqa: E402

GB = 1e9


def checkpoint_bytes(folder: Path) -> int:
    """What the queue's probe counts for a local folder: its *.safetensors files."""
    return sum(f.stat().st_size for f in folder.glob("*.safetensors"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="f32,f16,int4", help="dtypes, one job each")
    parser.add_argument("--workdir", type=Path, help="keeps the generated checkpoint")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="mobius-job-memory-"))
    shallow = make_checkpoint(work / "qwen2-4-layers", {**CONFIG, "num_hidden_layers": 4})
    models = {"tiny-llama": REPO / "examples" / "tiny-llama", "qwen2-4-layers": shallow}
    (work / "logs").mkdir(parents=True, exist_ok=True)
    rows = []
    for name, folder in models.items():
        size = checkpoint_bytes(folder)
        files = sorted(folder.glob("*.safetensors"))
        for dtype in args.dtype.split(","):
            out = work / "out"
            cmd = [sys.executable, "-m", "mobius", "convert", str(folder), "--dtype", dtype]
            cmd += ["--output", str(out), "--no-progress"]
            result = measure(f"{name}-{dtype}", cmd, [out], files, work / "logs")
            estimate = estimate_peak(size, (dtype,))
            rows.append(
                {
                    "model": name,
                    "checkpoint_gb": size / GB,
                    "dtype": dtype,
                    "peak_rss_gb": result["peak_rss_gb"],
                    "estimate_gb": estimate / GB,
                    "estimate_over_peak": estimate / GB / result["peak_rss_gb"],
                    "wall_s": result["wall_s"],
                }
            )
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'model':16} {'ckpt GB':>8} {'dtype':5} {'peak GB':>8} {'estimate':>8}  ratio")
        for r in rows:
            print(
                f"{r['model']:16} {r['checkpoint_gb']:8.3f} {r['dtype']:5} "
                f"{r['peak_rss_gb']:8.2f} {r['estimate_gb']:8.2f}  {r['estimate_over_peak']:.2f}"
            )
    # the estimate must not be below what a job took (validation failures still ran to the end)
    return 0 if all(r["estimate_over_peak"] >= 1.0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

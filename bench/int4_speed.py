"""cpu/f32 and cpu/int4 conversion time against their I/O floors (issue 16).

A floor is what any conversion of the checkpoint must do: read every byte of it (from the
page cache: the checkpoint is read once first, so both sides start warm) and write as many
bytes as that package holds. Each build and save runs in this process (imports done
beforehand), split into graph build, quantization (summed over threads, the checkpoint reads
inside it apart) and the rest of the save. Runs alternate floor and build; medians of
--repeat. Uses bench/convert.py's checkpoint (generated once, cached).

    PYTHONPATH=. python bench/int4_speed.py [--repeat 3] [--dtypes f32 int4] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from convert import CHECKPOINT_NAME, add_workdir, busy_cpu_s, log, make_checkpoint

from converter import build
from converter.lowering import int4 as int4_lowering
from converter.rows import FileRows

CHUNK = 16 << 20


class Clock:
    """Seconds spent inside wrapped functions, summed over threads (outermost calls only)."""

    def __init__(self):
        self.seconds, self._lock, self._depth = 0.0, threading.Lock(), threading.local()

    def wrap(self, function):
        def timed(*args, **kwargs):
            depth = getattr(self._depth, "n", 0)
            self._depth.n, start = depth + 1, time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._depth.n = depth
                if not depth:
                    with self._lock:
                        self.seconds += time.perf_counter() - start

        return timed


def io_floor(files: list[Path], package_bytes: int, scratch: Path) -> float:
    """Read `files` (cached) and write `package_bytes` bytes into a new file, in seconds."""
    buffer = bytearray(CHUNK)
    start = time.perf_counter()
    for path in files:
        with path.open("rb", buffering=0) as f:
            while f.readinto(buffer):
                pass
    with (scratch / "floor.data").open("wb", buffering=0) as f:
        left = package_bytes
        while left:
            left -= f.write(memoryview(buffer)[: min(left, CHUNK)])
    wall = time.perf_counter() - start
    (scratch / "floor.data").unlink()
    return wall


def timed_build(source: Path, out: Path, dtype: str) -> dict:
    """Build and save cpu/`dtype`, timing its stages."""
    quantize, read = Clock(), Clock()
    original_q, original_band = int4_lowering.quantize_blocks, FileRows.band
    int4_lowering.quantize_blocks = quantize.wrap(original_q)
    FileRows.band = read.wrap(original_band)
    try:
        start = time.perf_counter()
        package = build(str(source), ep="cpu", dtype=dtype, progress=False)
        built = time.perf_counter()
        package.save(out, progress=False)
        wall = time.perf_counter() - start
    finally:
        int4_lowering.quantize_blocks, FileRows.band = original_q, original_band
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    shutil.rmtree(out)
    return {
        "wall_s": wall,
        "build_s": built - start,
        "save_s": wall - (built - start),
        "quantize_thread_s": quantize.seconds - read.seconds if quantize.seconds else 0.0,
        "read_thread_s": read.seconds,
        "package_bytes": size,
    }


def run(args: argparse.Namespace) -> dict:
    source = make_checkpoint(args.workdir / CHECKPOINT_NAME)
    files = sorted(source.glob("*.safetensors"))
    scratch = Path(tempfile.mkdtemp(dir=args.workdir))
    results: dict = {"checkpoint_bytes": sum(f.stat().st_size for f in files)}
    try:
        io_floor(files, 0, scratch)  # warm the page cache
        for dtype in args.dtypes:
            package_bytes = timed_build(source, scratch / "warmup", dtype)["package_bytes"]
            floors, builds, others = [], [], []
            for i in range(args.repeat):
                busy, cpu = busy_cpu_s(), time.process_time()
                floors.append(io_floor(files, package_bytes, scratch))
                builds.append(timed_build(source, scratch / dtype, dtype))
                others.append(busy_cpu_s() - busy - (time.process_time() - cpu))
                wall = builds[-1]["wall_s"]
                log(f"{dtype} run {i + 1}: floor {floors[-1]:.2f} s, build {wall:.2f} s")
            median = {key: statistics.median(b[key] for b in builds) for key in builds[0]}
            floor = statistics.median(floors)
            results[dtype] = {
                **median,
                "floor_s": floor,
                "floors_s": floors,
                "walls_s": [b["wall_s"] for b in builds],
                "ratio": median["wall_s"] / floor,
                "others_cpu_s": others,
            }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {**results, "load_average": os.getloadavg()}


def report(r: dict) -> str:
    lines = []
    for dtype, b in r.items():
        if not isinstance(b, dict):
            continue
        lines += [
            f"cpu/{dtype}: build + save {b['wall_s']:.2f} s (runs {_list(b['walls_s'])}) = "
            f"{b['ratio']:.2f}x its I/O floor {b['floor_s']:.2f} s (runs {_list(b['floors_s'])}:"
            f" read {r['checkpoint_bytes'] / 1e9:.2f} GB cached + write "
            f"{b['package_bytes'] / 1e9:.2f} GB)",
            f"  graph build {b['build_s']:.2f} s, save {b['save_s']:.2f} s; inside the save, "
            f"summed over threads: quantization {b['quantize_thread_s']:.2f} s, "
            f"checkpoint reads {b['read_thread_s']:.2f} s; other processes' CPU per run: "
            f"{_list(b['others_cpu_s'], 1)} s",
        ]
    return "\n".join([*lines, "load average " + " ".join(f"{x:.2f}" for x in r["load_average"])])


def _list(values, digits: int = 2) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs; medians are reported")
    parser.add_argument(
        "--dtypes", nargs="+", choices=("f32", "int4"), default=["f32", "int4"], help="builds"
    )
    add_workdir(parser, "checkpoint cache")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    results = run(args)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

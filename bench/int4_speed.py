"""cpu/int4 conversion time against its I/O floor (issue 16).

The floor is what any conversion of the checkpoint must do: read every byte of it (from the
page cache: the checkpoint is read once first, so both sides start warm) and write as many
bytes as the int4 package holds. The int4 side builds and saves in this process (imports
done beforehand), split into graph build, quantization (summed over the writer threads, the
checkpoint reads inside it apart) and the rest of the save. Runs alternate floor and build;
medians of --repeat. Uses bench/convert.py's checkpoint (generated once, cached).

    PYTHONPATH=. python bench/int4_speed.py [--repeat 3] [--json]
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

from convert import CHECKPOINT_NAME, busy_cpu_s, log, make_checkpoint

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


def int4_build(source: Path, out: Path) -> dict:
    """Build and save cpu/int4, timing its stages."""
    quantize, read = Clock(), Clock()
    original_q, original_band = int4_lowering.quantize_blocks, FileRows.band
    int4_lowering.quantize_blocks = quantize.wrap(original_q)
    FileRows.band = read.wrap(original_band)
    try:
        start = time.perf_counter()
        package = build(str(source), ep="cpu", dtype="int4", progress=False)
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
        "quantize_thread_s": quantize.seconds - read.seconds,
        "read_thread_s": read.seconds,
        "package_bytes": size,
    }


def run(args: argparse.Namespace) -> dict:
    source = make_checkpoint(args.workdir / CHECKPOINT_NAME)
    files = sorted(source.glob("*.safetensors"))
    scratch = Path(tempfile.mkdtemp(dir=args.workdir))
    try:
        io_floor(files, 0, scratch)  # warm the page cache
        package_bytes = int4_build(source, scratch / "warmup")["package_bytes"]
        floors, builds, others = [], [], []
        for i in range(args.repeat):
            busy, cpu = busy_cpu_s(), time.process_time()
            floors.append(io_floor(files, package_bytes, scratch))
            builds.append(int4_build(source, scratch / "int4"))
            others.append(busy_cpu_s() - busy - (time.process_time() - cpu))
            log(f"run {i + 1}: floor {floors[-1]:.2f} s, int4 {builds[-1]['wall_s']:.2f} s")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    median = {key: statistics.median(b[key] for b in builds) for key in builds[0]}
    floor = statistics.median(floors)
    return {
        "checkpoint_bytes": sum(f.stat().st_size for f in files),
        "floor_s": floor,
        "floors_s": floors,
        "int4": median,
        "int4_walls_s": [b["wall_s"] for b in builds],
        "ratio": median["wall_s"] / floor,
        "others_cpu_s": others,
        "load_average": os.getloadavg(),
    }


def report(r: dict) -> str:
    q = r["int4"]
    return "\n".join(
        [
            f"I/O floor (read {r['checkpoint_bytes'] / 1e9:.2f} GB cached + write "
            f"{q['package_bytes'] / 1e9:.2f} GB): {r['floor_s']:.2f} s "
            f"(runs {_list(r['floors_s'])})",
            f"cpu/int4 build + save: {q['wall_s']:.2f} s (runs {_list(r['int4_walls_s'])})"
            f" = {r['ratio']:.2f}x the floor",
            f"  graph build {q['build_s']:.2f} s, save {q['save_s']:.2f} s; inside the save, "
            f"summed over writer threads: quantization {q['quantize_thread_s']:.2f} s, "
            f"checkpoint reads {q['read_thread_s']:.2f} s",
            f"other processes' CPU per run: {_list(r['others_cpu_s'], 1)} s; load average "
            + " ".join(f"{x:.2f}" for x in r["load_average"]),
        ]
    )


def _list(values, digits: int = 2) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs; medians are reported")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "mobius-bench",
        help="checkpoint cache (default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    results = run(args)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

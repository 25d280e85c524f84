"""Conversion benchmark: mobius vs onnxruntime-genai's model builder.

Generates (once, cached) a random-weight bf16 checkpoint shaped like Qwen2.5-0.5B, then
measures, each tool in its own subprocess and with the checkpoint evicted from the page
cache first: wall time and peak RSS of an f32 and an int4 CPU conversion, the cold raw
read time of the checkpoint, and decode tokens/s of both int4 packages in
onnxruntime-genai. See docs/benchmarks.md.

    python bench/convert.py [--only mobius|builder] [--skip-decode] [--json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

REPO = Path(__file__).resolve().parent.parent
TOKENIZER = REPO / "examples" / "tiny-llama"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
CHECKPOINT_NAME = "qwen2.5-0.5b-shaped"
# Ids 0 and 1 are the tiny tokenizer's <|begin_of_text|> and <|end_of_text|>.
CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 896,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "intermediate_size": 4864,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "attention_dropout": 0.0,
    "use_sliding_window": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 0,
    "eos_token_id": 1,
}
GENERATION = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1, "do_sample": False}
PROMPT = "The quick brown fox jumps over the lazy dog, and then it runs into the forest."
NEW_TOKENS = 64
GB = 1e9
# Row -> (test on mobius's value and the mobius/builder ratio, the target as printed).
TARGETS = {
    "f32_wall": (lambda m, r: r <= 0.30, "<= 0.30x builder"),
    "f32_rss": (lambda m, r: m <= 1.25, "<= 1.25 GB"),
    "int4_wall": (lambda m, r: r <= 0.35, "<= 0.35x builder"),
    "int4_decode": (lambda m, r: r >= 1.0, ">= 1.0x builder"),
}


def tensor_shapes(cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    """The HF state-dict names and shapes of a Qwen2 checkpoint with tied embeddings."""
    h, inter = cfg["hidden_size"], cfg["intermediate_size"]
    q = cfg["num_attention_heads"] * cfg["head_dim"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]
    shapes = [("model.embed_tokens.weight", (cfg["vocab_size"], h))]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes += [
            (p + "input_layernorm.weight", (h,)),
            (p + "self_attn.q_proj.weight", (q, h)),
            (p + "self_attn.q_proj.bias", (q,)),
            (p + "self_attn.k_proj.weight", (kv, h)),
            (p + "self_attn.k_proj.bias", (kv,)),
            (p + "self_attn.v_proj.weight", (kv, h)),
            (p + "self_attn.v_proj.bias", (kv,)),
            (p + "self_attn.o_proj.weight", (h, q)),
            (p + "post_attention_layernorm.weight", (h,)),
            (p + "mlp.gate_proj.weight", (inter, h)),
            (p + "mlp.up_proj.weight", (inter, h)),
            (p + "mlp.down_proj.weight", (h, inter)),
        ]
    return [*shapes, ("model.norm.weight", (h,))]


def normal_values(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """N(0, 0.02) bf16 weights, norms 1 (one f32 temporary at a time)."""
    if name.endswith("norm.weight"):
        return np.ones(shape, ml_dtypes.bfloat16)
    values = rng.standard_normal(shape, dtype=np.float32)
    values *= 0.02
    return values.astype(ml_dtypes.bfloat16)


Shard = list[tuple[str, tuple[int, ...]]]


def make_checkpoint(
    folder: Path,
    config: dict = CONFIG,
    shards: list[Shard] | None = None,
    values: Callable[[np.random.Generator, str, tuple[int, ...]], np.ndarray] = normal_values,
) -> Path:
    """Write the checkpoint into `folder` unless a complete one with this config is there.

    `shards` lists each file's tensors (default: all of `tensor_shapes(config)` in one
    model.safetensors); several are written as model-0000i-of-0000n.safetensors with an
    index, one file's tensors in memory at a time. `values` gives each tensor's bf16 values.
    """
    shards = shards if shards is not None else [tensor_shapes(config)]
    names = ["model.safetensors"]
    if len(shards) > 1:
        names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    config_file = folder / "config.json"
    ready = config_file.is_file() and all((folder / name).is_file() for name in names)
    if ready and json.loads(config_file.read_text()) == config:
        return folder
    log(f"generating a random {config['architectures'][0]} checkpoint in {folder} ...")
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    rng = np.random.default_rng(0)
    weight_map, total = {}, 0
    for name, shard in zip(names, shards, strict=True):
        tensors = {key: values(rng, key, shape) for key, shape in shard}
        save_file(tensors, staging / name, metadata={"format": "pt"})
        total += sum(t.nbytes for t in tensors.values())
        weight_map.update(dict.fromkeys(tensors, name))
        del tensors
    if len(names) > 1:
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (staging / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    for name in TOKENIZER_FILES:
        shutil.copyfile(TOKENIZER / name, staging / name)
    (staging / "generation_config.json").write_text(json.dumps(GENERATION, indent=2) + "\n")
    (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)  # the folder appears only once complete
    return folder


def evict(files: list[Path]) -> str:
    """Flush pending writes, drop `files` from the page cache; return the method that worked."""
    os.sync()  # the previous run's output must not be written back during the next one
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # only clean pages can be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    cached = resident_bytes(files)
    if cached is None:
        return "posix_fadvise (unverified: no fincore)"
    if cached == 0:
        return "posix_fadvise"
    try:  # needs root; drops every clean page on the machine
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return f"none ({cached} bytes still cached)"
    return "drop_caches"


def resident_bytes(files: list[Path]) -> int | None:
    """Bytes of `files` in the page cache, via util-linux `fincore` (None without it)."""
    if not shutil.which("fincore"):
        return None
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", *map(str, files)],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return None
    return sum(int(line) for line in out.stdout.split())


def raw_read(files: list[Path]) -> dict:
    """Cold sequential read of every byte of `files`."""
    method = evict(files)
    buffer = bytearray(16 << 20)
    total, start = 0, time.perf_counter()
    for path in files:
        with path.open("rb", buffering=0) as f:
            while n := f.readinto(buffer):
                total += n
    wall = time.perf_counter() - start
    return {"wall_s": wall, "bytes": total, "mb_per_s": total / 1e6 / wall, "evict": method}


def add_workdir(
    parser: argparse.ArgumentParser, what: str = "checkpoint cache and outputs"
) -> None:
    """--workdir: where the benchmarks cache their generated checkpoints (shared by them)."""
    default = Path(tempfile.gettempdir()) / "mobius-bench"
    parser.add_argument(
        "--workdir", type=Path, default=default, help=f"{what} (default: %(default)s)"
    )


def print_results(results: dict, table: Callable[[dict], str], as_json: bool) -> int:
    """The results as JSON or as the benchmark's table; the exit status."""
    print(json.dumps(results, indent=2) if as_json else table(results))
    return 0


def measure(name: str, cmd: list[str], clean: list[Path], files: list[Path], logs: Path) -> dict:
    """Run `cmd` cold; its wall time, CPU time and peak RSS (wait4, for that command alone:
    spawned by bench/rusage.py, so none of this process's memory counts)."""
    for path in clean:  # deleting an earlier run's output must not count
        shutil.rmtree(path, ignore_errors=True)
    method = evict(files)
    busy_before = busy_cpu_s()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log_file, usage_file = logs / f"{name}.log", logs / f"{name}.rusage.json"
    log(f"{name}: {' '.join(cmd)}")
    launcher = [sys.executable, str(Path(__file__).with_name("rusage.py")), str(usage_file)]
    with log_file.open("w") as out:
        subprocess.run([*launcher, *cmd], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
    usage = json.loads(usage_file.read_text())
    code = usage["exit_code"]
    result = {
        "ok": code == 0,
        "exit_code": code,
        "wall_s": usage["wall_s"],
        "cpu_s": usage["cpu_s"],
        "peak_rss_gb": usage["peak_rss_kib"] * 1024 / GB,
        # CPU the rest of the machine used meanwhile: other work skews wall times.
        "others_cpu_s": busy_cpu_s() - busy_before - usage["cpu_s"],
        "evict": method,
        "log": str(log_file),
    }
    if code == 0:
        wall, cpu, peak = result["wall_s"], result["cpu_s"], result["peak_rss_gb"]
        log(f"{name}: {wall:.1f} s ({cpu:.1f} s CPU), {peak:.2f} GB")
    else:
        tail = log_file.read_text().strip().splitlines()[-3:]
        log(f"{name}: FAILED (exit {code}), see {log_file}:\n    " + "\n    ".join(tail))
    return result


def busy_cpu_s() -> float:
    """Non-idle CPU seconds of the whole machine since boot (Linux /proc/stat)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = f.readline().split()[1:9]
    ticks = sum(int(t) for t in (user, nice, system, irq, softirq, steal))
    return ticks / os.sysconf("SC_CLK_TCK")


def decode(package: Path, prompt: list[int], repeat: int) -> dict:
    """Greedy decode of NEW_TOKENS tokens in onnxruntime-genai, timed after the prompt.

    One warm-up run, then `repeat` timed runs; the fastest is reported.
    """
    import onnxruntime_genai as og

    model = og.Model(str(package))

    def run() -> dict:
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=len(prompt) + NEW_TOKENS)
        generator = og.Generator(model, params)
        generator.append_tokens(prompt)  # prefill, not timed
        count, busy, cpu, start = 0, busy_cpu_s(), time.process_time(), time.perf_counter()
        while not generator.is_done():
            generator.generate_next_token()
            count += 1
        wall = time.perf_counter() - start
        others = busy_cpu_s() - busy - (time.process_time() - cpu)
        rate = count / wall
        return {"tokens": count, "wall_s": wall, "tokens_per_s": rate, "others_cpu_s": others}

    run()
    runs = [run() for _ in range(repeat)]
    best = max(runs, key=lambda r: r["tokens_per_s"])
    if best["tokens"] != NEW_TOKENS:
        log(f"warning: {package.name} stopped after {best['tokens']} tokens (EOS)")
    return {**best, "runs_tokens_per_s": [r["tokens_per_s"] for r in runs]}


def mobius_cmd(src: Path, out: Path, ep: str, dtype: str, head_bits: str = "8") -> list[str]:
    args = ["build", "--model", str(src), "--output", str(out), "--ep", ep, "--dtype", dtype]
    if dtype == "int4":
        args += ["--int4-head-bits", head_bits]
    return [sys.executable, "-m", "mobius", *args, "--no-progress"]


def builder_cmd(src: Path, out: Path, precision: str, cache: Path) -> list[str]:
    module = "onnxruntime_genai.models.builder"
    args = ["-i", str(src), "-o", str(out), "-p", precision, "-e", "cpu", "-c", str(cache)]
    return [sys.executable, "-m", module, *args]


def run_bench(args: argparse.Namespace) -> dict:
    work = args.workdir
    source = make_checkpoint(work / CHECKPOINT_NAME)
    files = sorted(source.glob("*.safetensors"))
    outputs, logs = work / "out", work / "logs"
    shutil.rmtree(outputs, ignore_errors=True)
    logs.mkdir(parents=True, exist_ok=True)
    tools = [args.only] if args.only else ["mobius", "builder"]
    results: dict = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "checkpoint": {"path": str(source), "bytes": sum(f.stat().st_size for f in files)},
        "mobius_ep": args.mobius_ep,
        "int4_head_bits": args.int4_head_bits,
        "raw_read": raw_read(files),
    }
    log(f"raw read: {results['raw_read']['wall_s']:.2f} s ({results['raw_read']['evict']})")
    for tool in tools:
        for dtype in ("f32", "int4"):
            name = f"{tool}-{dtype}"
            out, cache = outputs / name, outputs / f"{name}.cache"
            if tool == "mobius":
                cmd = mobius_cmd(source, out, args.mobius_ep, dtype, args.int4_head_bits)
            else:
                cmd = builder_cmd(source, out, dtype.replace("f32", "fp32"), cache)
            runs = [measure(name, cmd, [out, cache], files, logs) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: (not r["ok"], r["wall_s"]))
            results[f"{tool}_{dtype}"] = {**best, "walls_s": [r["wall_s"] for r in runs]}
    if not args.skip_decode:
        from tokenizers import Tokenizer

        prompt = Tokenizer.from_file(str(source / "tokenizer.json")).encode(PROMPT).ids
        for tool in tools:
            if results[f"{tool}_int4"]["ok"]:
                log(f"decoding with {tool}'s int4 package ...")
                package = outputs / f"{tool}-int4"
                results[f"{tool}_decode"] = decode(package, prompt, args.repeat)
    if not args.keep:
        shutil.rmtree(outputs, ignore_errors=True)
    return results


def table(results: dict) -> str:
    def value(key: str, field: str) -> float | None:
        entry = results.get(key)
        return entry.get(field) if entry and entry.get("ok", True) else None

    rows = [
        ("f32 convert wall (s)", "f32_wall", "f32", "wall_s"),
        ("f32 convert CPU (s)", None, "f32", "cpu_s"),
        ("f32 convert peak RSS (GB)", "f32_rss", "f32", "peak_rss_gb"),
        ("int4 convert wall (s)", "int4_wall", "int4", "wall_s"),
        ("int4 convert CPU (s)", None, "int4", "cpu_s"),
        ("int4 convert peak RSS (GB)", None, "int4", "peak_rss_gb"),
        ("int4 decode (tokens/s)", "int4_decode", "decode", "tokens_per_s"),
    ]
    fmt = "{:<28}{:>9}{:>9}{:>8}  {:<18}{}"
    lines = [fmt.format("", "mobius", "builder", "ratio", "target", "")]
    for label, target, key, field in rows:
        m, b = value(f"mobius_{key}", field), value(f"builder_{key}", field)
        ratio = m / b if m is not None and b is not None else None
        check, text = TARGETS.get(target, (None, ""))
        status = ""
        if check and m is not None and (ratio is not None or target == "f32_rss"):
            status = "PASS" if check(m, ratio) else "MISS"
        cells = [f"{x:.2f}" if x is not None else "n/a" for x in (m, b)]
        cells.append(f"{ratio:.2f}x" if ratio is not None else "n/a")
        lines.append(fmt.format(label, *cells, text, status))
    raw = results["raw_read"]
    lines.append(
        f"raw cold read: {raw['wall_s']:.2f} s for {raw['bytes'] / GB:.3f} GB "
        f"({raw['mb_per_s']:.0f} MB/s; page cache evicted with {raw['evict']})"
    )
    m = value("mobius_f32", "wall_s")
    if m is not None:
        lines.append(f"mobius f32 convert = {m / raw['wall_s']:.1f}x the raw read")
    for key, entry in results.items():
        if not isinstance(entry, dict) or "others_cpu_s" not in entry or not entry.get("ok", 1):
            continue
        if entry["others_cpu_s"] > 0.1 * entry["wall_s"]:
            others = entry["others_cpu_s"]
            lines.append(f"warning: other processes used {others:.1f} CPU s during {key}")
    return "\n".join(lines)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("mobius", "builder"), help="run one tool only")
    parser.add_argument("--skip-decode", action="store_true", help="skip the decode tokens/s")
    add_workdir(parser)
    parser.add_argument("--keep", action="store_true", help="keep the converted packages")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per conversion; the fastest is reported"
    )
    parser.add_argument("--mobius-ep", default="cpu", help="mobius --ep (default: %(default)s)")
    parser.add_argument(
        "--int4-head-bits",
        default="8",
        choices=("8", "4", "float"),
        help="mobius int4's head and embedding bits (4: as the builder's int4 quantizes them)",
    )
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    return print_results(run_bench(args), table, args.json)


if __name__ == "__main__":
    sys.exit(main())

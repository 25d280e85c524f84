"""Scale benchmark: conversions of checkpoints as large as the Hub's biggest common ones.

Writes (once) checkpoints shaped like Llama-3-8B (16 GB bf16) and Qwen2.5-32B (66 GB bf16,
more than this machine's memory) as sparse files of zeros, sharded like the Hub's, so disk
and generation time are no limit; then converts them in a subprocess and reports wall time,
peak RSS and bytes written. Zeros read as fast as the page cache serves them, so the wall
time is an upper bound on the converter's own work, not a disk benchmark. See
docs/benchmarks.md.

    python bench/scale.py [--model 8b|32b] [--dtype int4|f16] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path

from convert import GB, TOKENIZER, TOKENIZER_FILES, measure, mobius_cmd

SHARD_BYTES = 5 * 10**9  # the Hub's usual shard size
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 0,
    "eos_token_id": 1,
}
MODELS = {
    "8b": {
        **LLAMA,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
    },
    "32b": {
        **LLAMA,
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 5120,
        "intermediate_size": 27648,
        "num_hidden_layers": 64,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "vocab_size": 152064,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
    },
}
# Row -> the goal issue 16 sets for peak RSS, in GB.
GOALS = {("8b", "int4"): 1.5, ("8b", "f16"): 1.5, ("32b", "int4"): 2.0}


def tensors(cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    """The state-dict names and shapes of a Llama-layout checkpoint (Qwen2 adds q/k/v biases)."""
    h, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    d = h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
    biased = cfg["model_type"] == "qwen2"
    out = [("model.embed_tokens.weight", (vocab, h))]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (h,)), (p + "post_attention_layernorm.weight", (h,))]
        for name, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
            out.append((f"{p}self_attn.{name}.weight", (rows, h)))
            if biased:
                out.append((f"{p}self_attn.{name}.bias", (rows,)))
        out += [
            (p + "self_attn.o_proj.weight", (h, q)),
            (p + "mlp.gate_proj.weight", (inter, h)),
            (p + "mlp.up_proj.weight", (inter, h)),
            (p + "mlp.down_proj.weight", (h, inter)),
        ]
    return [*out, ("model.norm.weight", (h,)), ("lm_head.weight", (vocab, h))]


def write_sparse_shard(path: Path, shard: list[tuple[str, tuple[int, ...]]]) -> int:
    """A safetensors file of bf16 zeros: the header, then a hole as long as the data."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shard:
        size = 2 * _count(shape)
        span = [offset, offset + size]
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": span}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + offset)
    return offset


def make_sparse_checkpoint(folder: Path, cfg: dict) -> Path:
    """The checkpoint in `folder`, in shards of about SHARD_BYTES, unless already there."""
    config = folder / "config.json"
    if config.is_file() and json.loads(config.read_text()) == cfg:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shards, current, size = [], [], 0
    for name, shape in tensors(cfg):
        if current and size + 2 * _count(shape) > SHARD_BYTES:
            shards.append(current)
            current, size = [], 0
        current.append((name, shape))
        size += 2 * _count(shape)
    shards.append(current)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        total += write_sparse_shard(folder / name, shard)
        weight_map.update({tensor: name for tensor, _ in shard})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    for name in TOKENIZER_FILES:
        shutil.copyfile(TOKENIZER / name, folder / name)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    parser.add_argument("--dtype", action="append", choices=("int4", "f16", "f32"))
    parser.add_argument("--ep", default="cpu")
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "mobius-bench-scale"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for model in args.model or ["8b"]:
        source = make_sparse_checkpoint(args.workdir / model, MODELS[model])
        files = sorted(source.glob("*.safetensors"))
        checkpoint = sum(f.stat().st_size for f in files)
        for dtype in args.dtype or ["int4", "f16"]:
            out, logs = args.workdir / f"{model}-{dtype}.out", args.workdir / "logs"
            logs.mkdir(exist_ok=True)
            cmd = mobius_cmd(source, out, args.ep, dtype)
            result = measure(f"{model}-{dtype}", cmd, [out], files, logs)
            result.update(model=model, dtype=dtype, checkpoint_gb=checkpoint / GB)
            result["written_gb"] = folder_bytes(out) / GB if result["ok"] else None
            result["goal_rss_gb"] = GOALS.get((model, dtype))
            shutil.rmtree(out, ignore_errors=True)
            rows.append(result)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    fmt = "{:<6}{:<6}{:>12}{:>9}{:>14}{:>12}{:>10}"
    print(fmt.format("model", "dtype", "checkpoint", "wall s", "peak RSS GB", "written GB", "goal"))
    for r in rows:
        goal = r["goal_rss_gb"]
        met = "" if goal is None else ("PASS" if r["peak_rss_gb"] <= goal else "MISS")
        written = f"{r['written_gb']:.2f}" if r["written_gb"] is not None else "failed"
        print(
            fmt.format(
                r["model"],
                r["dtype"],
                f"{r['checkpoint_gb']:.1f} GB",
                f"{r['wall_s']:.0f}",
                f"{r['peak_rss_gb']:.2f}",
                written,
                f"<= {goal} {met}" if goal else "",
            )
        )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())

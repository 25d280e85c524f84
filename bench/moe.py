"""MoE conversion benchmark: mobius (OLMoE, QMoE) vs onnxruntime-genai's model builder.

onnxruntime-genai 0.18's builder has no OLMoE, Mixtral or Qwen3-MoE. Of the MoE families it
builds for CPU from a bf16 checkpoint, LFM2-MoE is the closest: GPT-OSS's QMoE path reads only
MXFP4 experts, PhiMoE is CUDA-only, and Qwen3.5-MoE and Gemma 4 are multimodal wrappers. So
the builder converts an LFM2-MoE-shaped checkpoint of OLMoE-1B-7B's sizes, and mobius the
OLMoE-shaped one; both cpu/int4, experts as com.microsoft.QMoE.

Generates (once, cached) random bf16 checkpoints, one file per layer: OLMoE-1B-7B at full
depth (16 layers, 13.8 GB) and both families cut to `--layers` layers, which the builder
(it loads the whole model into memory with transformers) can hold on a 24 GB machine.
Measures, each conversion in its own subprocess with the checkpoint evicted from the page
cache first, the two tools alternately round by round: wall time, CPU time, peak RSS and
package size; then mobius alone at full depth; then int4 decode tokens/s of each package in
onnxruntime-genai. See docs/benchmarks.md.

    python bench/moe.py [--layers N] [--repeat N] [--skip-full] [--skip-decode] [--json]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
from convert import (
    GB,
    GENERATION,
    PROMPT,
    add_workdir,
    builder_cmd,
    decode,
    log,
    make_checkpoint,
    measure,
    mobius_cmd,
    print_results,
)

OLMOE = {
    "architectures": ["OlmoeForCausalLM"],
    "model_type": "olmoe",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "intermediate_size": 1024,
    "num_experts": 64,
    "num_experts_per_tok": 8,
    "norm_topk_prob": False,
    "vocab_size": 50304,
    "max_position_embeddings": 4096,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-5,
    "hidden_act": "silu",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "clip_qkv": None,
    "tie_word_embeddings": False,
    "router_aux_loss_coef": 0.01,
    "output_router_logits": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": GENERATION["bos_token_id"],
    "eos_token_id": GENERATION["eos_token_id"],
    "pad_token_id": GENERATION["pad_token_id"],
}
# LFM2-MoE's own layout (short-convolution layers with attention every fourth layer, per-head
# q/k norms, a sigmoid router with expert bias) at OLMoE-1B-7B's sizes: the same expert stacks,
# so the same bytes to read and quantize (a conv layer's 4 H^2 weights match attention's).
LFM2_MOE = {
    "architectures": ["Lfm2MoeForCausalLM"],
    "model_type": "lfm2_moe",
    **{k: OLMOE[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads")},
    **{k: OLMOE[k] for k in ("num_key_value_heads", "intermediate_size", "vocab_size")},
    "moe_intermediate_size": OLMOE["intermediate_size"],
    "num_experts": OLMOE["num_experts"],
    "num_experts_per_tok": OLMOE["num_experts_per_tok"],
    "num_dense_layers": 0,
    "norm_topk_prob": True,
    "use_expert_bias": True,
    "routed_scaling_factor": 1.0,
    "layer_types": ["conv", "conv", "full_attention", "conv"] * 4,
    "conv_L_cache": 3,
    "conv_bias": False,
    "max_position_embeddings": 4096,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    "norm_eps": 1e-5,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    **{k: OLMOE[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id")},
}
TARGET_WALL = 0.35  # mobius / builder int4 wall (issue 11)


def olmoe_shards(cfg: dict) -> list[list[tuple[str, tuple[int, ...]]]]:
    """OLMoE's HF tensors, one file per layer (plus the embedding's and the head's)."""
    h, i, e, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_experts"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * h // cfg["num_attention_heads"]
    shards = [[("model.embed_tokens.weight", (v, h))]]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shard = [
            (p + "input_layernorm.weight", (h,)),
            (p + "self_attn.q_proj.weight", (h, h)),
            (p + "self_attn.k_proj.weight", (kv, h)),
            (p + "self_attn.v_proj.weight", (kv, h)),
            (p + "self_attn.o_proj.weight", (h, h)),
            (p + "self_attn.q_norm.weight", (h,)),
            (p + "self_attn.k_norm.weight", (kv,)),
            (p + "post_attention_layernorm.weight", (h,)),
            (p + "mlp.gate.weight", (e, h)),
        ]
        for x in range(e):
            q = f"{p}mlp.experts.{x}."
            shard += [
                (q + "gate_proj.weight", (i, h)),
                (q + "up_proj.weight", (i, h)),
                (q + "down_proj.weight", (h, i)),
            ]
        shards.append(shard)
    return [*shards, [("model.norm.weight", (h,)), ("lm_head.weight", (v, h))]]


def lfm2_moe_shards(cfg: dict) -> list[list[tuple[str, tuple[int, ...]]]]:
    """LFM2-MoE's HF tensors (experts per expert, w1/w3/w2), one file per layer."""
    h, i, v = cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["vocab_size"]
    e, d = cfg["num_experts"], h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * d
    shards = [[("model.embed_tokens.weight", (v, h))]]
    for layer, kind in enumerate(cfg["layer_types"]):
        p = f"model.layers.{layer}."
        if kind == "full_attention":
            shard = [
                (p + "self_attn.q_proj.weight", (h, h)),
                (p + "self_attn.k_proj.weight", (kv, h)),
                (p + "self_attn.v_proj.weight", (kv, h)),
                (p + "self_attn.out_proj.weight", (h, h)),
                (p + "self_attn.q_layernorm.weight", (d,)),
                (p + "self_attn.k_layernorm.weight", (d,)),
            ]
        else:
            shard = [
                (p + "conv.in_proj.weight", (3 * h, h)),
                (p + "conv.out_proj.weight", (h, h)),
                (p + "conv.conv.weight", (h, 1, cfg["conv_L_cache"])),
            ]
        shard += [
            (p + "operator_norm.weight", (h,)),
            (p + "ffn_norm.weight", (h,)),
            (p + "feed_forward.gate.weight", (e, h)),
            (p + "feed_forward.expert_bias", (e,)),
        ]
        for x in range(e):
            q = f"{p}feed_forward.experts.{x}."
            shard += [
                (q + "w1.weight", (i, h)),
                (q + "w3.weight", (i, h)),
                (q + "w2.weight", (h, i)),
            ]
        shards.append(shard)
    return [*shards, [("model.embedding_norm.weight", (h,)), ("lm_head.weight", (v, h))]]


def random_bits(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random bf16 weights at memory speed (~15 s for 13.8 GB, where N(0, 0.02) through f32
    takes ~5 min): random sign and 7 mantissa bits, exponent fixed, so |w| in [2^-7, 2^-6).
    Not zeros: every quantization block has a full range of distinct values. Norms are 1."""
    if name.endswith(("norm.weight", "layernorm.weight")):
        return np.ones(shape, ml_dtypes.bfloat16)
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    bits &= 0x807F  # sign, mantissa
    bits |= 0x3C00  # exponent 120: 2^-7
    return bits.view(ml_dtypes.bfloat16)


def with_layers(cfg: dict, layers: int) -> dict:
    out = {**cfg, "num_hidden_layers": layers}
    if "layer_types" in cfg:
        out["layer_types"] = cfg["layer_types"][:layers]
    return out


def expert_stack_bytes(cfg: dict) -> dict:
    """The largest stack one MoE layer packs (fc1, [E, 2I, H]), in bf16, f32 and int4."""
    elements = cfg["num_experts"] * 2 * cfg["intermediate_size"] * cfg["hidden_size"]
    return {"bf16": 2 * elements, "f32": 4 * elements, "int4": elements // 2}


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def convert(name: str, cmd: list[str], out: Path, files: list[Path], logs: Path) -> dict:
    result = measure(name, cmd, [out, out.with_suffix(".cache")], files, logs)
    if result["ok"]:
        result["package_gb"] = folder_bytes(out) / GB
    return result


def best(runs: list[dict]) -> dict:
    fastest = min(runs, key=lambda r: (not r["ok"], r["wall_s"]))
    return {**fastest, "walls_s": [r["wall_s"] for r in runs if r["ok"]]}


def run_bench(args: argparse.Namespace) -> dict:
    work, layers = args.workdir, args.layers
    olmoe_cut = with_layers(OLMOE, layers)
    lfm2_cut = with_layers(LFM2_MOE, layers)
    sources = {
        "mobius": make_checkpoint(
            work / f"olmoe-1b-7b-shaped-{layers}l", olmoe_cut, olmoe_shards(olmoe_cut), random_bits
        ),
        "builder": make_checkpoint(
            work / f"lfm2-moe-olmoe-sized-{layers}l",
            lfm2_cut,
            lfm2_moe_shards(lfm2_cut),
            random_bits,
        ),
    }
    if not args.skip_full:
        sources["mobius_full"] = make_checkpoint(
            work / "olmoe-1b-7b-shaped", OLMOE, olmoe_shards(OLMOE), random_bits
        )
    files = {key: sorted(src.glob("*.safetensors")) for key, src in sources.items()}
    outputs, logs = work / "out", work / "logs"
    shutil.rmtree(outputs, ignore_errors=True)
    outputs.mkdir(parents=True)
    logs.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "layers": layers,
        "checkpoints": {
            key: {"path": str(sources[key]), "bytes": sum(f.stat().st_size for f in fs)}
            for key, fs in files.items()
        },
        "largest_expert_stack_bytes": expert_stack_bytes(OLMOE),
    }

    def command(key: str, out: Path) -> list[str]:
        if key == "builder":
            return builder_cmd(sources[key], out, "int4", out.with_suffix(".cache"))
        return mobius_cmd(sources[key], out, "cpu", "int4", head_bits="4")

    runs: dict[str, list[dict]] = {key: [] for key in sources}
    for round_ in range(args.repeat):  # alternate, so a burst of other load hits both
        for key in ("mobius", "builder"):
            out = outputs / key
            runs[key].append(
                convert(f"{key}-{layers}l-{round_}", command(key, out), out, files[key], logs)
            )
    if "mobius_full" in sources:
        for round_ in range(args.full_repeat):
            out = outputs / "mobius_full"
            name = f"mobius-full-{round_}"
            runs["mobius_full"].append(
                convert(name, command("mobius_full", out), out, files["mobius_full"], logs)
            )
    for key, entries in runs.items():
        results[key] = best(entries)
    if not args.skip_decode:
        from tokenizers import Tokenizer

        prompt = Tokenizer.from_file(str(sources["mobius"] / "tokenizer.json")).encode(PROMPT).ids
        rates: dict[str, list[dict]] = {}
        for _ in range(args.repeat):  # alternate here too
            for key in sources:
                if results[key]["ok"]:
                    log(f"decoding with {key}'s int4 package ...")
                    rates.setdefault(key, []).append(decode(outputs / key, prompt, 2))
        for key, entries in rates.items():
            fastest = max(entries, key=lambda r: r["tokens_per_s"])
            results[f"{key}_decode"] = {**fastest, "rounds": [r["tokens_per_s"] for r in entries]}
    if not args.keep:
        shutil.rmtree(outputs, ignore_errors=True)
    return results


def table(results: dict) -> str:
    layers = results["layers"]

    def value(key: str, field: str) -> float | None:
        entry = results.get(key)
        return entry.get(field) if entry and entry.get("ok", True) else None

    rows = [
        ("int4 convert wall (s)", "wall_s", ""),
        ("int4 convert CPU (s)", "cpu_s", ""),
        ("int4 convert peak RSS (GB)", "peak_rss_gb", ""),
        ("int4 package (GB)", "package_gb", ""),
        ("int4 decode (tokens/s)", "tokens_per_s", "_decode"),
    ]
    head = [f"mobius {layers}L", f"builder {layers}L", "ratio", "mobius 16L"]
    fmt = "{:<28}{:>11}{:>12}{:>8}{:>12}"
    lines = [
        f"mobius: OLMoE-shaped; builder: LFM2-MoE-shaped, OLMoE-1B-7B sizes; {layers}L = "
        f"first {layers} of 16 layers",
        fmt.format("", *head),
    ]
    for label, field, suffix in rows:
        m, b = value("mobius" + suffix, field), value("builder" + suffix, field)
        full = value("mobius_full" + suffix, field)
        ratio = f"{m / b:.2f}x" if m is not None and b else "n/a"
        cells = [f"{x:.2f}" if x is not None else "n/a" for x in (m, b)]
        lines.append(fmt.format(label, *cells, ratio, f"{full:.2f}" if full is not None else "n/a"))
    m, b = value("mobius", "wall_s"), value("builder", "wall_s")
    if m is not None and b:
        status = "PASS" if m / b <= TARGET_WALL else "MISS"
        lines.append(f"wall target <= {TARGET_WALL}x builder: {m / b:.2f}x {status}")
    stack = results["largest_expert_stack_bytes"]
    lines.append(
        f"largest expert stack (fc1 [64, 2048, 2048]): {stack['bf16'] / GB:.2f} GB bf16, "
        f"{stack['f32'] / GB:.2f} GB f32; checkpoints: "
        + ", ".join(f"{k} {v['bytes'] / GB:.2f} GB" for k, v in results["checkpoints"].items())
    )
    for key, entry in results.items():
        busy = isinstance(entry, dict) and entry.get("ok", 1) and "others_cpu_s" in entry
        if busy and entry["others_cpu_s"] > 0.1 * entry["wall_s"]:
            others = entry["others_cpu_s"]
            lines.append(f"warning: other processes used {others:.1f} CPU s during {key}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--layers", type=int, default=4, help="layers of the compared checkpoints (default 4)"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of the compared conversions and decodes"
    )
    parser.add_argument(
        "--full-repeat", type=int, default=1, help="runs of mobius's full-depth conversion"
    )
    parser.add_argument("--skip-full", action="store_true", help="skip mobius at full depth")
    parser.add_argument("--skip-decode", action="store_true", help="skip the decode tokens/s")
    add_workdir(parser)
    parser.add_argument("--keep", action="store_true", help="keep the converted packages")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    if not 1 <= args.layers <= OLMOE["num_hidden_layers"]:
        parser.error("--layers must be 1..16")
    return print_results(run_bench(args), table, args.json)


if __name__ == "__main__":
    sys.exit(main())

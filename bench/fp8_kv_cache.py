"""fp8-kv-cache benchmark: accuracy and KV memory of a float8 cache against an f16 (and f32) one.

For examples/tiny-llama (trained) and a larger random Llama-shaped checkpoint (made once with
transformers, hidden 1024, 8 layers, 16 heads, 4 KV heads of 64), builds the portable package
with an exact cache and with `--features fp8-kv-cache`, in f16 and f32, then decodes a batch of
2 prompts greedily for 32 steps. Reports, fp8 against the exact cache of the same dtype: the
minimum cosine of the logits (prompt and every step, both fed the exact package's greedy
tokens), their top-1 agreement, how many leading free-running greedy tokens agree, and the
measured bytes per token of the presents a prefill returns (all layers, K and V), with the
fp8/exact ratio. See docs/build-features.md.

    python bench/fp8_kv_cache.py [--json] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from converter import build  # noqa: E402
from converter.validate.metrics import leading_matches  # noqa: E402
from converter.validate.runtime import OnnxDecoder  # noqa: E402

TINY_LLAMA = REPO / "examples" / "tiny-llama"
LARGER = {
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "head_dim": 64,
    "vocab_size": 8192,
    "max_position_embeddings": 512,
}
STEPS = 32
PROMPT_LENGTH = 16
DTYPES = ("f16", "f32")


def larger_checkpoint(folder: Path) -> Path:
    """A random Llama of LARGER's shape (transformers' own initialization), saved once."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(**LARGER)
    transformers.LlamaForCausalLM(config).eval().save_pretrained(folder)
    return folder


def decode(package: Path, ids: np.ndarray, forced: np.ndarray | None = None):
    """Greedy tokens per row over STEPS steps (or the `forced` ones fed instead), and the
    logits of the prompt and of each step."""
    steps: list[np.ndarray] = []
    calls = OnnxDecoder(package)._calls(ids, np.ones_like(ids), steps)
    logits = [next(calls)]
    while len(steps) < STEPS:
        greedy = logits[-1][:, -1:].argmax(-1)
        steps.append(greedy if forced is None else forced[:, len(steps) : len(steps) + 1])
        if len(steps) < STEPS:
            logits.append(next(calls))
    return np.concatenate(steps, axis=1), np.concatenate(logits, axis=1)


def cache_bytes_per_token(package: Path, ids: np.ndarray) -> float:
    """The bytes of the presents a prefill of `ids` returns (all layers, K and V), per token."""
    decoder = OnnxDecoder(package)
    positions = np.broadcast_to(np.arange(ids.shape[1]), ids.shape)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": positions}
    _, *presents = decoder.session.run(decoder.outputs, {**feeds, **decoder._empty_past(2)})
    return sum(p.nbytes for p in presents) / ids.size


def compare(source: Path, work: Path) -> dict:
    ids = np.random.default_rng(0).integers(3, 500, size=(2, PROMPT_LENGTH))
    results = {}
    for dtype in DTYPES:
        packages = {}
        for name, features in (("exact", []), ("fp8", ["fp8-kv-cache"])):
            packages[name] = work / f"{source.name}-{dtype}-{name}"
            package = build(str(source), dtype=dtype, features=features, progress=False)
            package.save(packages[name], progress=False)
        tokens, logits = decode(packages["exact"], ids)
        free_tokens, _ = decode(packages["fp8"], ids)
        _, fp8_logits = decode(packages["fp8"], ids, forced=tokens)
        exact_bytes, fp8_bytes = (cache_bytes_per_token(packages[n], ids) for n in packages)
        cosine = (logits * fp8_logits).sum(-1) / (
            np.linalg.norm(logits, axis=-1) * np.linalg.norm(fp8_logits, axis=-1)
        )
        results[dtype] = {
            "min_cosine": float(cosine.min()),
            "top1_agreement": float((logits.argmax(-1) == fp8_logits.argmax(-1)).mean()),
            "greedy_leading_match": min(
                map(leading_matches, tokens.tolist(), free_tokens.tolist())
            ),
            "exact_bytes_per_token": exact_bytes,
            "fp8_bytes_per_token": fp8_bytes,
            "ratio": fp8_bytes / exact_bytes,
        }
    return results


def table(results: dict) -> str:
    lines = []
    fmt = "{:<28}{:>8}{:>8}{:>8}{:>14}{:>14}{:>8}"
    head = ("model / cache vs", "cosine", "top-1", "greedy", "exact B/tok", "fp8 B/tok", "ratio")
    lines.append(fmt.format(*head))
    for model, by_dtype in results.items():
        for dtype, r in by_dtype.items():
            lines.append(
                fmt.format(
                    f"{model} / {dtype}",
                    f"{r['min_cosine']:.5f}",
                    f"{r['top1_agreement']:.3f}",
                    f"{r['greedy_leading_match']}/{STEPS}",
                    f"{r['exact_bytes_per_token']:.0f}",
                    f"{r['fp8_bytes_per_token']:.0f}",
                    f"{r['ratio']:.3f}",
                )
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the raw numbers")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "mobius-bench",
        help="the larger checkpoint's cache and the packages (default: %(default)s)",
    )
    args = parser.parse_args()
    work = args.workdir / "fp8-kv-cache"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    larger = larger_checkpoint(args.workdir / "llama-1024x8-random")
    results = {"tiny-llama (trained)": compare(TINY_LLAMA, work)}
    results["llama 1024x8 (random)"] = compare(larger, work)
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

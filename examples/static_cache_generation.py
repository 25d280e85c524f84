"""Greedy generation in plain onnxruntime from a `static-cache` package (the portable contract).

Builds examples/tiny-llama with `--features static-cache --max-seq-len 64` for the default EP,
then decodes a batch of two prompts of different lengths. What a runtime does for this graph:

- allocates every `key_cache.{i}` / `value_cache.{i}` once, [batch, kv_heads, max_seq_len,
  head_dim], and binds each as its input and as its `updated_*` output, so TensorScatter
  writes the new keys and values into it in place (nothing grows, nothing is copied);
- feeds right-padded rows: `write_indices` [batch], where each row's first new token goes (its
  tokens already cached), and `nonpad_kv_seqlen` [batch], its valid slots once they are in;
- after the prompt, feeds one token per row at the slot after the row's last real token.

    PYTHONPATH=. python examples/static_cache_generation.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from converter import build

TINY_LLAMA = Path(__file__).resolve().parent / "tiny-llama"
PROMPTS = ["The river runs past the old mill", "Once upon a time"]
MAX_SEQ_LEN, NEW_TOKENS = 64, 16


def generate(session: ort.InferenceSession, rows: list[list[int]]) -> np.ndarray:
    batch, lengths = len(rows), np.array([len(r) for r in rows])
    ids = np.zeros((batch, lengths.max()), np.int64)  # right-padded: what follows is never read
    for row, tokens in enumerate(rows):
        ids[row, : len(tokens)] = tokens
    binding = session.io_binding()
    binding.bind_output("logits")  # bound first: get_outputs()[0]
    for cache in (i for i in session.get_inputs() if "cache" in i.name):
        buffer = ort.OrtValue.ortvalue_from_numpy(np.zeros([batch, *cache.shape[1:]], np.float32))
        binding.bind_ortvalue_input(cache.name, buffer)
        binding.bind_ortvalue_output(f"updated_{cache.name}", buffer)
    written, new, generated = np.zeros(batch, np.int64), lengths, []
    for _ in range(NEW_TOKENS):
        feeds = {
            "input_ids": ids,
            "position_ids": written[:, None] + np.arange(ids.shape[1]),
            "write_indices": written,
            "nonpad_kv_seqlen": written + new,
        }
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output("logits")  # anew each call: its shape follows the tokens
        session.run_with_iobinding(binding)
        logits = binding.get_outputs()[0].numpy()
        last = new - 1 if not generated else np.zeros(batch, np.int64)
        ids = logits[np.arange(batch), last].argmax(-1)[:, None]
        generated.append(ids[:, 0])
        written, new = written + new, np.ones(batch, np.int64)
    return np.stack(generated, axis=1)


def main() -> None:
    package = build(str(TINY_LLAMA), features=["static-cache"], max_seq_len=MAX_SEQ_LEN)
    tokenizer = Tokenizer.from_file(str(TINY_LLAMA / "tokenizer.json"))
    with tempfile.TemporaryDirectory() as folder:
        session = ort.InferenceSession(package.save(folder) / "model.onnx")
        rows = [tokenizer.encode(prompt).ids for prompt in PROMPTS]
        for prompt, tokens in zip(PROMPTS, generate(session, rows), strict=True):
            print(f"{prompt!r} -> {tokenizer.decode(tokens.tolist())!r}")


if __name__ == "__main__":
    main()

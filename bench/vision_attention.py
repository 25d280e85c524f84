"""Vision-tower attention over packed images: the cpu EP's fused kernel (com.microsoft
MultiHeadAttention with the block mask as an additive bias) against the portable one (opset-23
Attention with the boolean mask), the same `BlockAttention` component built for each EP, in one
process on the same inputs. Shaped like a Qwen2.5-VL-3B tower layer (16 heads of 80) over two
images of 32 x 24 and 24 x 32 patches. See docs/benchmarks.md.

    python bench/vision_attention.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
from onnxscript import GraphBuilder

from converter.components.encoder_attention import BlockAttention
from converter.execution_providers import EXECUTION_PROVIDERS
from converter.tasks.base import as_model, new_graph

HEADS, HEAD_SIZE = 16, 80
IMAGES = (32 * 24, 24 * 32)  # patches of each image
F32 = ir.DataType.FLOAT


def session(ep: str, patches: int) -> ort.InferenceSession:
    graph = new_graph()
    builder = GraphBuilder(graph)
    q, k, v = (builder.input(n, F32, [1, patches, HEADS * HEAD_SIZE]) for n in "qkv")
    keep = builder.input("keep", ir.DataType.BOOL, [patches, patches])
    kernel = BlockAttention(builder.op, EXECUTION_PROVIDERS[ep], keep, F32)
    builder.add_output(kernel(builder.op, q, k, v, HEADS, HEAD_SIZE**-0.5), "out")
    model = as_model(graph)
    model.opset_imports["com.microsoft"] = 1
    return ort.InferenceSession(ir.to_proto(model).SerializeToString())


def timed(run, runs: int) -> float:
    run()  # warm-up
    started = time.perf_counter()
    for _ in range(runs):
        run()
    return (time.perf_counter() - started) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    patches = sum(IMAGES)
    image = np.repeat(np.arange(len(IMAGES)), IMAGES)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal((1, patches, HEADS * HEAD_SIZE), np.float32) for n in "qkv"}
    feeds["keep"] = image[:, None] == image[None, :]
    seconds, outputs = {}, {}
    for ep in ("default", "cpu"):
        s = session(ep, patches)
        outputs[ep] = s.run(None, feeds)[0]
        seconds[ep] = timed(lambda s=s: s.run(None, feeds), args.runs)
    result = {
        "patches": patches,
        "standard_ms": seconds["default"] * 1e3,
        "fused_ms": seconds["cpu"] * 1e3,
        "speedup": seconds["default"] / seconds["cpu"],
        "max_abs_diff": float(np.abs(outputs["default"] - outputs["cpu"]).max()),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{patches} patches, {HEADS} heads of {HEAD_SIZE}: opset-23 Attention "
            f"{result['standard_ms']:.1f} ms, MultiHeadAttention {result['fused_ms']:.1f} ms "
            f"({result['speedup']:.2f}x), outputs within {result['max_abs_diff']:.1e}"
        )


if __name__ == "__main__":
    main()

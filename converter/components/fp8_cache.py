"""A key/value cache kept as float8 e4m3fn between steps (the `fp8-kv-cache` feature).

Each layer's past K and V are dequantized before attention reads them and the present ones
quantized as they leave, with one static scale per KV head: stored = value / scale, saturated
to e4m3fn's +-448. e4m3fn keeps 3 mantissa bits over [2^-6, 448] * scale, so with scale 1 (the
default, as vLLM uses for checkpoints without calibrated scales) any K or V element of
magnitude 0.016 to 448 is stored within 6.25 %. The scales are initializers
(`kv_cache_scale.{layer}.key` / `.value`, shape [kv_heads]) a calibration can overwrite.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.components.cache import KV, SLIDING_KV, LayerCache
from converter.dtypes import NUMPY_OF
from converter.errors import ConfigError

FLOAT8 = ir.DataType.FLOAT8E4M3FN
KV_CACHE_DTYPES = {"float8e4m3fn": FLOAT8}
DEFAULT_SCALE = 1.0
SCALE_NAME = "kv_cache_scale.%d.%s"  # % (layer, "key" or "value")
HEAD_AXIS = 1  # caches are [batch, kv_heads, sequence, head_dim]


def check_quantizable(caches: list[LayerCache]) -> None:
    """Refuse a model whose caches are not all self-attention K/V [heads, sequence, size]."""
    for i, cache in enumerate(caches):
        if cache.kind not in (KV, SLIDING_KV):
            raise ConfigError(
                f"kv cache dtype float8e4m3fn: layer {i} keeps a {cache.kind!r} cache, not "
                "keys and values (only attention K/V caches are stored as float8)"
            )
        if cache.latent:
            raise ConfigError(
                f"kv cache dtype float8e4m3fn: layer {i}'s cache is multi-head latent "
                "attention's compressed latent, which every head reads through its own "
                "up-projection, not per-head keys and values (measured: a float8 latent "
                "flips whole rows of logits)"
            )
        for shape in (cache.key, cache.value):
            if len(shape) != 3 or shape[1] != "sequence" or shape[0] != cache.key[0]:
                raise ConfigError(
                    f"kv cache dtype float8e4m3fn: layer {i}'s cache {list(shape)} is not "
                    "[kv_heads, sequence, head_dim]"
                )


class Fp8Cache:
    """The scales of one graph's caches and the Q/DQ nodes around them; `dtype` is the graph's
    float type (DequantizeLinear gives the type of its scale)."""

    def __init__(self, graph: ir.Graph, caches: list[LayerCache], dtype: ir.DataType):
        check_quantizable(caches)
        self.scales = [
            {part: self._scale(graph, i, part, cache.key[0], dtype) for part in ("key", "value")}
            for i, cache in enumerate(caches)
        ]

    @staticmethod
    def _scale(graph, layer: int, part: str, heads: int, dtype) -> ir.Value:
        array = np.full([heads], DEFAULT_SCALE, NUMPY_OF[dtype])
        value = ir.Value(name=SCALE_NAME % (layer, part), const_value=ir.tensor(array))
        graph.register_initializer(value)
        return value

    def dequantized(self, op, layer: int, key: ir.Value, value: ir.Value) -> tuple:
        """Layer `layer`'s past (float8) in the graph's float type."""
        scales = self.scales[layer]
        return tuple(
            op.DequantizeLinear(past, scales[part], axis=HEAD_AXIS)
            for part, past in (("key", key), ("value", value))
        )

    def quantized(self, op, layer: int, key: ir.Value, value: ir.Value) -> tuple:
        """Layer `layer`'s present as float8; beyond +-448 x scale it saturates (QuantizeLinear's
        default for float8) rather than turning into NaN."""
        scales = self.scales[layer]
        return tuple(
            op.QuantizeLinear(present, scales[part], axis=HEAD_AXIS, output_dtype=FLOAT8)
            for part, present in (("key", key), ("value", value))
        )

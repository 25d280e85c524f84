"""Ministral 3 (the text model of Mistral 3): Mistral whose queries grow with the position,
by 1 + beta * log(1 + floor(position / original_max_position_embeddings)) (Llama 4's scaling,
set in the rope parameters)."""

from __future__ import annotations

import dataclasses
from math import inf

import onnx_ir as ir

from converter.components import Attention
from converter.config import FULL, SLIDING, ArchitectureConfig, ConfigReader, ConfigRules
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


@dataclasses.dataclass(frozen=True)
class Ministral3Config(ArchitectureConfig):
    query_scaling_beta: float = 0.0
    query_scaling_length: int = 1  # positions per step of the scaling


class Ministral3Attention(Attention):
    def __init__(self, cfg: Ministral3Config, dtype: ir.DataType, spec, packed: bool = False):
        super().__init__(cfg, dtype, spec, packed)
        self.dtype = dtype
        self.beta, self.length = cfg.query_scaling_beta, cfg.query_scaling_length

    def _query_scale(self, op, position_ids):
        """[batch, sequence, 1], computed in float32 as transformers does."""
        steps = op.Floor(op.Div(op.Cast(position_ids, to=ir.DataType.FLOAT), float(self.length)))
        scale = op.Add(op.Mul(op.Log(op.Add(steps, 1.0)), self.beta), 1.0)
        return op.Cast(op.Unsqueeze(scale, [-1]), to=self.dtype)

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        q, k, v = self._project(op, x)
        # a per-position factor: scaling before the rotation equals scaling after it
        q = op.Mul(q, self._query_scale(op, kernel.position_ids))
        y, present_key, present_value = kernel(op, q, k, v, past_key, past_value, self.spec)
        return self.o_proj(op, y), present_key, present_value


class Ministral3Layer(DecoderLayer):
    attention_cls = Ministral3Attention


class Ministral3Body(DecoderBody):
    layer_cls = Ministral3Layer


class Ministral3LM(DecoderLM):
    body_cls = Ministral3Body


class Ministral3Rules(ConfigRules):
    def read(self, r: ConfigReader) -> Ministral3Config:
        cfg = super().read(r)
        key = "rope_scaling" if r.raw.get("rope_scaling") else "rope_parameters"
        params = r.raw.get(key) or {}
        beta = params.get("llama_4_scaling_beta")
        length = params.get("original_max_position_embeddings")
        if isinstance(beta, bool) or not isinstance(beta, int | float) or not 0 <= beta < inf:
            raise ConfigError(f"'{key}.llama_4_scaling_beta' must be a number >= 0, got {beta!r}")
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise ConfigError(
                f"'{key}.original_max_position_embeddings' must be a positive integer, "
                f"got {length!r}"
            )
        fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
        return Ministral3Config(**fields, query_scaling_beta=beta, query_scaling_length=length)

    def attention_windows(self, r: ConfigReader, layers: int) -> tuple[int | None, tuple[str, ...]]:
        window, layer_types = super().attention_windows(r, layers)
        if layer_types != ((SLIDING if window else FULL),) * layers:
            r.refuse("layer_types", "Ministral 3 attends alike in every layer, by 'sliding_window'")
        return window, layer_types


FAMILIES = [
    Family(
        "ministral3",
        Ministral3LM,
        "Mistral with Llama 4's position-dependent query scaling; yarn rope",
        rules=Ministral3Rules(qkv_bias=False, o_bias=False, mlp_bias=False),
    ),
]

"""MiMo-V2-Flash: DeepSeek-V3's routing (sigmoid scores, a selection-only correction bias,
grouped top-k, renormalized and scaled weights; no shared expert) in the `mlp_layer_types`
sparse layers, on an attention whose values have their own head size (`v_head_dim`, smaller
than q/k's `head_dim`) and are multiplied by `attention_value_scale`; sliding layers have twice
the KV heads of full ones and a learned sink logit per head (`attention_sink_bias`), and each
layer type has its own partial rope (0.334 of the head by default).

Values are cached and attended padded with zeros to the key head size, so keys and values
share one cache layout (what onnxruntime-genai allocates) and either attention kernel takes
them; the zero columns of each head's output are dropped before o_proj. Exact: a zero value
column only yields a zero output column.
"""

import copy
import dataclasses

from onnxscript import nn

from converter.components.linear import Linear, PackedLinear
from converter.config import FULL, SLIDING, ConfigReader, Rope, extend, parse_local_rope
from converter.config.architecture import ArchitectureConfig
from converter.config.moe import MoeConfig
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.glm4_moe import DeepSeekRoutingRules
from converter.models.moe_layers import mlp_layer_types
from converter.registry import Family

# transformers' default partial_rotary_factor of a "default" rope without one
_PARTIAL = 0.334
# transformers' MiMo-V2-Flash when config.json has no rope_parameters
_ROPE = {
    FULL: {"rope_type": "default", "rope_theta": 5_000_000.0, "partial_rotary_factor": _PARTIAL},
    SLIDING: {"rope_type": "default", "rope_theta": 10_000.0, "partial_rotary_factor": _PARTIAL},
}


@dataclasses.dataclass(frozen=True)
class MimoV2FlashConfig(ArchitectureConfig):
    v_head_dim: int = 0  # the value heads' size (q and k: head_dim)
    value_scale: float = 1.0  # values multiplied by this (attention_value_scale)


class MimoV2FlashRules(DeepSeekRoutingRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        # transformers' default: full attention in the first layer and every sixth
        return FULL if index == 0 or (index + 1) % 6 == 0 else SLIDING

    def sliding_window(self, r: ConfigReader) -> int | None:
        if r.raw.get("sliding_window_size") is not None:
            # as transformers reads it: the window size previous tokens plus the query
            r.raw["sliding_window"] = r.int("sliding_window_size", lo=0) + 1
        return super().sliding_window(r)

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        params = r.raw.get("rope_parameters")
        if params is None:
            r.raw["rope_parameters"] = params = copy.deepcopy(_ROPE)
        if not isinstance(params, dict):
            raise ConfigError("'rope_parameters' must map each layer type to its rope settings")
        for kind, settings in params.items():
            if not isinstance(settings, dict):
                continue
            if settings.get("rope_type") != "default":
                raise ConfigError(
                    f"'rope_parameters.{kind}.rope_type' = {settings.get('rope_type')!r} is not "
                    "supported: MiMo-V2-Flash is converted with its default rope only"
                )
            settings.setdefault("partial_rotary_factor", _PARTIAL)
        return super().rope(r, head_dim)

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return parse_local_rope(r.raw, head_dim=head_dim)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        # transformers' MiMo-V2-Flash has no shared expert (it ignores n_shared_experts)
        return dataclasses.replace(
            super().moe(r, cfg),
            shared_size=0,
            sparse_layers=mlp_layer_types(r, cfg.num_hidden_layers, dense_first=1),
        )

    def read(self, r: ConfigReader) -> MimoV2FlashConfig:
        cfg = super().read(r)
        v_head_dim = r.int("v_head_dim", default=128)
        if v_head_dim > cfg.head_dim:
            raise ConfigError(
                f"'v_head_dim' = {v_head_dim} is not supported above 'head_dim' = {cfg.head_dim}:"
                " values are cached padded to the key head size"
            )
        heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        if heads % (2 * kv_heads):
            raise ConfigError(
                f"sliding layers have 2 * 'num_key_value_heads' = {2 * kv_heads} KV heads, which "
                f"must divide 'num_attention_heads' = {heads}"
            )
        layer_kv_heads = tuple(
            2 * kv_heads if kind == SLIDING else kv_heads for kind in cfg.layer_types
        )
        scale = r.get("attention_value_scale")
        return extend(
            dataclasses.replace(
                cfg, layer_kv_heads=layer_kv_heads, attention_sinks=SLIDING in cfg.layer_types
            ),
            MimoV2FlashConfig,
            v_head_dim=v_head_dim,
            value_scale=1.0 if scale is None else r.float("attention_value_scale"),
        )


class MimoV2FlashAttention(nn.Module):
    """q/k/v projections (values `v_head_dim` wide per head, scaled), a sink logit per head on
    sliding layers, and o_proj over the heads' `v_head_dim`-wide outputs."""

    def __init__(self, cfg: MimoV2FlashConfig, dtype, spec, packed: bool = False):
        super().__init__()
        d, dv = spec.head_dim, cfg.v_head_dim
        self.spec, self.v_head_dim, self.value_scale = spec, dv, cfg.value_scale
        parts = [
            ("q_proj", spec.heads * d),
            ("k_proj", spec.kv_heads * d),
            ("v_proj", spec.kv_heads * dv),
        ]
        self.qkv = PackedLinear(parts, cfg.hidden_size, cfg.qkv_bias, dtype, packed)
        self.o_proj = Linear(spec.heads * dv, cfg.hidden_size, False, dtype)
        sliding = spec.window is not None
        self.attention_sink_bias = nn.Parameter([spec.heads], dtype) if sliding else None

    def _padded(self, op, x, heads: int, width: int):
        """[batch, seq, heads * v_head_dim] -> [batch, seq, heads * width], zeros appended to
        each head."""
        if width == self.v_head_dim:
            return x
        per_head = op.Reshape(x, [0, 0, heads, self.v_head_dim])
        padded = op.Pad(per_head, [0, 0, 0, 0, 0, 0, 0, width - self.v_head_dim])
        return op.Reshape(padded, [0, 0, heads * width])

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        spec = self.spec
        q, k, v = self.qkv(op, x)
        if self.value_scale != 1.0:
            v = op.Mul(v, self.value_scale)
        v = self._padded(op, v, spec.kv_heads, spec.head_dim)
        y, present_key, present_value = kernel(
            op, q, k, v, past_key, past_value, spec, sinks=self.attention_sink_bias
        )
        if spec.head_dim != self.v_head_dim:  # each head's first v_head_dim columns
            per_head = op.Reshape(y, [0, 0, spec.heads, spec.head_dim])
            kept = op.Slice(per_head, [0], [self.v_head_dim], [3])
            y = op.Reshape(kept, [0, 0, spec.heads * self.v_head_dim])
        return self.o_proj(op, y), present_key, present_value


class MimoV2FlashLayer(DecoderLayer):
    attention_cls = MimoV2FlashAttention


class MimoV2FlashBody(DecoderBody):
    layer_cls = MimoV2FlashLayer


class MimoV2FlashLM(DecoderLM):
    body_cls = MimoV2FlashBody


FAMILIES = [
    Family(
        "mimo_v2_flash",
        MimoV2FlashLM,
        "DeepSeek-V3 routing without shared experts in the sparse layers; values with their "
        "own head size (cached padded to q/k's) and scale, sliding layers with twice the KV "
        "heads and a sink logit per head, partial rope per layer type",
        ("XiaomiMiMo/MiMo-V2-Flash",),
        rules=MimoV2FlashRules(normalize=True, o_bias=False),
        # the multi-token-prediction layers, as transformers skips them
        unused=(r"model\.mtp\..*",),
        category="moe",
    ),
]

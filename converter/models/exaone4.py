"""EXAONE 4: OLMo-2's post-norms with per-head q/k RMSNorm; sliding-window layers with a
global (full) one every `sliding_window_pattern` layers, the global ones without rope (NoPE)."""

from converter.config import FULL, SLIDING, ConfigReader, ConfigRules, Rope
from converter.models.decoder import DecoderLM
from converter.registry import Family


class Exaone4Rules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        if window is None:
            return FULL
        return SLIDING if (index + 1) % r.int("sliding_window_pattern") else FULL

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        if SLIDING not in layer_types:  # no sliding window at all: every layer rotates
            return tuple(rope for _ in layer_types)
        return tuple(None if kind == FULL else rope for kind in layer_types)


FAMILIES = [
    Family(
        "exaone4",
        DecoderLM,
        "post-norms, per-head q/k RMSNorm, sliding windows with NoPE global layers",
        ("LGAI-EXAONE/EXAONE-4.0-1.2B",),
        rules=Exaone4Rules(
            layout="post", qk_norm="head", qkv_bias=False, o_bias=False, mlp_bias=False
        ),
    ),
]

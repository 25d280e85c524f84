"""EXAONE 4: OLMo-2's post-norms with per-head q/k RMSNorm; sliding-window layers with a
global (full) one every `sliding_window_pattern` layers, the global ones without rope (NoPE)."""

from converter.config import FULL, SLIDING, ConfigReader, ConfigRules
from converter.models.decoder import DecoderLM
from converter.registry import Family


class Exaone4Rules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        if window is None:
            return FULL
        return SLIDING if (index + 1) % r.int("sliding_window_pattern") else FULL

    def nope_layers(
        self, r: ConfigReader, window: int | None, layer_types: tuple[str, ...]
    ) -> frozenset[int]:
        if window is None:  # no sliding window at all: every layer rotates
            return frozenset()
        return frozenset(i for i, kind in enumerate(layer_types) if kind == FULL)


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

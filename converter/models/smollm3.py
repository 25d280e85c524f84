"""SmolLM3: Llama whose every `no_rope_layer_interval`-th layer (or those `no_rope_layers`
marks 0) has no rotary embedding; with `use_sliding_window`, those layers slide."""

from converter.config import FULL, SLIDING, ConfigReader, ConfigRules, Rope
from converter.errors import ConfigError
from converter.models.decoder import DecoderLM
from converter.registry import Family


def _uses_rope(r: ConfigReader) -> list[bool]:
    layers = r.int("num_hidden_layers")
    flags = r.raw.get("no_rope_layers")
    if flags is None:
        interval = r.int("no_rope_layer_interval", default=4)
        return [(i + 1) % interval != 0 for i in range(layers)]
    if not isinstance(flags, list) or len(flags) < layers or set(flags) - {0, 1}:
        raise ConfigError(f"'no_rope_layers' must hold a 0 or 1 for each of the {layers} layers")
    return [flag == 1 for flag in flags[:layers]]


class SmolLM3Rules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        sliding = r.bool("use_sliding_window", False) and window is not None
        return SLIDING if sliding and not _uses_rope(r)[index] else FULL

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        return tuple(rope if uses else None for uses in _uses_rope(r))


FAMILIES = [
    Family(
        "smollm3",
        DecoderLM,
        "no rotary embedding on every 4th layer (NoPE), optional sliding window on those",
        ("HuggingFaceTB/SmolLM3-3B",),
        rules=SmolLM3Rules(),
    ),
]

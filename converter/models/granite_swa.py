"""Granite SWA: Granite with sliding windows on three layers of four, a rope base per layer
(`layer_rope_theta`, 0: no rotary embedding) and a learned attention sink per head."""

import dataclasses

from converter.config import FULL, SLIDING, ArchitectureConfig, ConfigReader, ConfigRules, Rope
from converter.errors import ConfigError
from converter.models.decoder import DecoderLM
from converter.registry import Family


class GraniteSWARules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL if window is None or index % 4 == 0 else SLIDING

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        thetas = r.raw.get("layer_rope_theta")
        if thetas is None:
            return (rope,) * len(layer_types)
        valid = isinstance(thetas, list) and len(thetas) == len(layer_types)
        if not valid or not all(isinstance(t, int | float) and t >= 0 for t in thetas):
            raise ConfigError(
                f"'layer_rope_theta' must hold a base >= 0 for each of the {len(layer_types)} "
                "layers (0: no rotary embedding)"
            )
        return tuple(dataclasses.replace(rope, theta=float(t)) if t else None for t in thetas)

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        return dataclasses.replace(super().read(r), attention_sinks=True)


FAMILIES = [
    Family(
        "granite_swa",
        DecoderLM,
        "Granite with sliding windows, a rope base per layer (0: NoPE), attention sinks",
        ("ibm-granite/granite-4.1-3b-swa",),
        rules=GraniteSWARules(),
    ),
]

"""Helium: Llama with its rotary embedding on interleaved pairs and no output projection bias."""

import dataclasses

from converter.config import ConfigReader, ConfigRules, Rope
from converter.models.decoder import DecoderLM
from converter.registry import Family


class HeliumRules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return dataclasses.replace(super().rope(r, head_dim), interleaved=True)


FAMILIES = [
    Family(
        "helium",
        DecoderLM,
        "rotary embedding on interleaved pairs",
        ("kyutai/helium-1-preview-2b",),
        rules=HeliumRules(o_bias=False),
    ),
]

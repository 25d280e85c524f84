"""Nemotron: Arcee's model (Llama with a plain squared-ReLU MLP of `up_proj` and `down_proj`)
with LayerNorm whose scale is stored as w - 1, and partial rotary."""

from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.arcee import ArceeLM
from converter.registry import Family


class NemotronRules(ConfigRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        r.int("num_key_value_heads")  # transformers' Nemotron has no default for it
        return super().read(r)


FAMILIES = [
    Family(
        "nemotron",
        ArceeLM,
        "LayerNorm with (1+w) scale, plain squared-ReLU MLP, partial rotary",
        ("nvidia/Minitron-4B-Base",),
        rules=NemotronRules(norm_type="layer", norm_offset=1.0),
    ),
]

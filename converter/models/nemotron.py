"""Nemotron: LayerNorm whose scale is stored as w - 1, a plain (ungated) squared-ReLU MLP of
`up_proj` and `down_proj`, partial rotary."""

from converter.components import UpDownMLP
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class NemotronLayer(DecoderLayer):
    mlp_cls = UpDownMLP


class NemotronBody(DecoderBody):
    layer_cls = NemotronLayer


class NemotronLM(DecoderLM):
    body_cls = NemotronBody


class NemotronRules(ConfigRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        r.int("num_key_value_heads")  # transformers' Nemotron has no default for it
        return super().read(r)


FAMILIES = [
    Family(
        "nemotron",
        NemotronLM,
        "LayerNorm with (1+w) scale, plain squared-ReLU MLP, partial rotary",
        ("nvidia/Minitron-4B-Base",),
        rules=NemotronRules(norm_type="layer", norm_offset=1.0),
    ),
]

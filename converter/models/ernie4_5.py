"""ERNIE 4.5 (dense): Llama with interleaved rotary pairs and one `use_bias` for every
projection."""

import dataclasses

from converter.config import ArchitectureConfig, ConfigReader, ConfigRules, Rope
from converter.models.decoder import DecoderLM
from converter.registry import Family


class Ernie45Rules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return dataclasses.replace(super().rope(r, head_dim), interleaved=True)

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        bias = r.bool("use_bias", default=False)
        return dataclasses.replace(super().read(r), qkv_bias=bias, o_bias=bias, mlp_bias=bias)


FAMILIES = [
    Family(
        "ernie4_5",
        DecoderLM,
        "interleaved rotary pairs, biases everywhere or nowhere (use_bias)",
        ("baidu/ERNIE-4.5-0.3B-PT",),
        rules=Ernie45Rules(),
    ),
]

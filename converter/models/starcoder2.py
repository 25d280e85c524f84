"""StarCoder2: LayerNorm, a plain GELU MLP named `c_fc`/`c_proj`, one `use_bias` for every
projection, and Mistral's sliding window on every layer."""

import dataclasses

from converter.components import FcProjMLP
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class Starcoder2Layer(DecoderLayer):
    mlp_cls = FcProjMLP


class Starcoder2Body(DecoderBody):
    layer_cls = Starcoder2Layer


class Starcoder2LM(DecoderLM):
    body_cls = Starcoder2Body


class Starcoder2Rules(ConfigRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        bias = r.bool("use_bias", default=True)
        return dataclasses.replace(super().read(r), qkv_bias=bias, o_bias=bias, mlp_bias=bias)


FAMILIES = [
    Family(
        "starcoder2",
        Starcoder2LM,
        "LayerNorm, plain GELU MLP, biases everywhere (use_bias), sliding window",
        ("bigcode/starcoder2-3b",),
        rules=Starcoder2Rules(norm_type="layer"),
    ),
]

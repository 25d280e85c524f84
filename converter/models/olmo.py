"""OLMo (1): Llama with LayerNorms that have no weight or bias, and q/k/v optionally clamped."""

from converter.config import ConfigReader, ConfigRules
from converter.models.decoder import DecoderLM
from converter.registry import Family


class OlmoRules(ConfigRules):
    def clip_qkv(self, r: ConfigReader) -> float | None:
        return r.optional_float("clip_qkv")


FAMILIES = [
    Family(
        "olmo",
        DecoderLM,
        "LayerNorm without weight or bias, q/k/v clamped to clip_qkv",
        ("allenai/OLMo-1B-hf",),
        rules=OlmoRules(norm_type="layer", norm_affine=False),
    ),
]

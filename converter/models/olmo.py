"""OLMo (1): Llama with LayerNorms that have no weight or bias, and q/k/v optionally clamped."""

from converter.config import ConfigRules
from converter.models.decoder import DecoderLM
from converter.registry import Family

FAMILIES = [
    Family(
        "olmo",
        DecoderLM,
        "LayerNorm without weight or bias, q/k/v clamped to clip_qkv",
        ("allenai/OLMo-1B-hf",),
        rules=ConfigRules(norm_type="layer", norm_affine=False),
    ),
]

"""Jais 2: Arcee's model (Llama with a plain `up_proj`/`down_proj` MLP, squared ReLU by
default) with LayerNorm and biased projections."""

from converter.config import ConfigRules
from converter.models.arcee import ArceeLM
from converter.registry import Family

FAMILIES = [
    Family(
        "jais2",
        ArceeLM,
        "LayerNorm, biased projections, squared-ReLU up/down MLP",
        ("inceptionai/Jais-2-8B-Chat",),
        rules=ConfigRules(norm_type="layer"),
    ),
]

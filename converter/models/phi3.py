"""Phi-3 / Phi-4-mini: fused `qkv_proj` and `gate_up_proj`, LongRoPE, partial rotary."""

from converter.config import ConfigReader, ConfigRules, Rope, parse_rope
from converter.models.decoder import DecoderLM
from converter.registry import Family


class Phi3Rules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        # transformers' Phi3Config reads an old "yarn" rope type as longrope
        return parse_rope(r.raw, head_dim=head_dim, yarn_is_longrope=True)


FAMILIES = [
    Family(
        "phi3",
        DecoderLM,
        "fused qkv and gate_up projections, LongRoPE, partial rotary",
        ("microsoft/Phi-3-mini-4k-instruct", "microsoft/Phi-4-mini-instruct"),
        rules=Phi3Rules(fused_qkv=True, fused_gate_up=True),
    ),
]

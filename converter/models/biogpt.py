"""BioGPT: OPT's fairseq layers under `biogpt`, scaled word embeddings, learned positions
offset by 2, a final `layer_norm` and a head named `output_projection`."""

from __future__ import annotations

import dataclasses

from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.models.decoder import DecoderLM
from converter.models.opt import FairseqBody
from converter.registry import Family

# BioGPT's LayerNorms take torch's default epsilon; transformers never reads layer_norm_eps
TORCH_LAYER_NORM_EPS = 1e-5


class BioGptLM(DecoderLM):
    body_cls = FairseqBody
    body_name, head_name = "biogpt", "output_projection"


class BioGptRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        scale = r.float("hidden_size") ** 0.5 if r.bool("scale_embedding", True) else 1.0
        cfg = super().read(r)
        return dataclasses.replace(cfg, norm_eps=TORCH_LAYER_NORM_EPS, embedding_multiplier=scale)


FAMILIES = [
    Family(
        "biogpt",
        BioGptLM,
        "fairseq layers, scaled embeddings, learned positions offset by 2",
        ("microsoft/biogpt",),
        rules=BioGptRules(norm_type="layer", qkv_bias=True, o_bias=True, mlp_bias=True, rope=False),
        prefix="biogpt.",
    ),
]

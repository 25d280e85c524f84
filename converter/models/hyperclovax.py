"""HyperCLOVA X: Granite's multipliers, a norm after each block as well as before it
(Peri-LN, `use_post_norm`), and logits multiplied (not divided) by `logits_scaling`."""

import dataclasses
from typing import ClassVar

from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class HyperCLOVAXLayer(DecoderLayer):
    layout_norms: ClassVar = {
        **DecoderLayer.layout_norms,
        "sandwich": ("input_layernorm", "post_norm1", "post_attention_layernorm", "post_norm2"),
    }


class HyperCLOVAXBody(DecoderBody):
    layer_cls = HyperCLOVAXLayer


class HyperCLOVAXLM(DecoderLM):
    body_cls = HyperCLOVAXBody


class HyperCLOVAXRules(ConfigRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        return dataclasses.replace(
            super().read(r),
            layout="sandwich" if r.bool("use_post_norm", default=True) else "pre",
            logits_multiplier=r.float("logits_scaling", default=1.0),
        )


FAMILIES = [
    Family(
        "hyperclovax",
        HyperCLOVAXLM,
        "Granite multipliers, Peri-LN (norms before and after each block), logits x scaling",
        ("naver-hyperclovax/HyperCLOVAX-SEED-Think-14B",),
        rules=HyperCLOVAXRules(),
    ),
]

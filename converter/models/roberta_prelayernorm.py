"""RoBERTa-PreLayerNorm: RoBERTa with pre-norm layers (each MLP's norm inside its intermediate)
and a final LayerNorm on the body, which the pooler reads too."""

from __future__ import annotations

from converter.components import LayerNorm
from converter.models.prenorm import NormedIntermediate, PreNormBody, PreNormEncoder, PreNormLayer
from converter.models.roberta import RobertaModel, RobertaRules, roberta_unused
from converter.registry import Family


class PreLayerNormLayer(PreNormLayer):
    intermediate_cls = NormedIntermediate
    mlp_norm_name = None


class PreLayerNormEncoder(PreNormEncoder):
    layer_cls = PreLayerNormLayer
    final_norm_name = None


class PreLayerNormBody(PreNormBody):
    encoder_cls = PreLayerNormEncoder

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled)
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def hidden_states(self, op, inputs):
        return self.LayerNorm(op, super().hidden_states(op, inputs))


class RobertaPreLayerNormModel(RobertaModel):
    body_cls = PreLayerNormBody
    body_name = "roberta_prelayernorm"


FAMILIES = [
    Family(
        "roberta-prelayernorm",
        RobertaPreLayerNormModel,
        "RoBERTa with pre-norm layers and a final LayerNorm",
        ("andreasmadsen/efficient_mlm_m0.40",),
        rules=RobertaRules(),
        task="feature-extraction",
        category="encoder",
        unused=roberta_unused("roberta_prelayernorm"),
        prefix="roberta_prelayernorm.",
    ),
]

"""I-BERT: RoBERTa whose quant_mode swaps in integer-only kernels (QuantLinear, IntGELU,
IntSoftmax, IntLayerNorm). With quant_mode false, as released checkpoints are configured,
transformers runs the float weights through float ops: RoBERTa exactly, beside quantization
buffers (integer weights, scaling factors, activation ranges) that nothing reads."""

from __future__ import annotations

from converter.models.roberta import RobertaModel, RobertaRules, roberta_unused
from converter.registry import Family


class IBertRules(RobertaRules):
    def read_extra(self, r) -> dict:
        if r.bool("quant_mode", False):
            r.refuse("quant_mode", "I-BERT's integer-only kernels are not built (float mode is)")
        return super().read_extra(r)


class IBertModel(RobertaModel):
    body_name = "ibert"


# the quantization buffers every I-BERT checkpoint carries, read only in quant_mode
QUANT_BUFFERS = (
    r".*\.(weight_integer|bias_integer|weight_scaling_factor|fc_scaling_factor)",
    r".*\.(act_scaling_factor|x_min|x_max)",
    r".*LayerNorm\.shift",
)

FAMILIES = [
    Family(
        "ibert",
        IBertModel,
        "RoBERTa in float mode (quant_mode false); integer-only mode refused",
        ("kssteven/ibert-roberta-base",),
        rules=IBertRules(),
        task="feature-extraction",
        category="encoder",
        unused=(*roberta_unused("ibert"), *QUANT_BUFFERS),
        prefix="ibert.",
    ),
]

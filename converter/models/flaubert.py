"""FlauBERT: XLM's encoder (xlm.py); layerdrop only acts in training. Its pre-norm layout is
refused: transformers 5.24 cannot run it (the pre_norm branch indexes its EncoderDecoderCache
like a list), so there is no reference to hold a conversion to."""

from __future__ import annotations

from converter.config.encoder import EncoderConfig
from converter.config.reader import ConfigReader
from converter.models.xlm import XlmModel, XlmRules
from converter.registry import Family


class FlaubertRules(XlmRules):
    def read(self, r: ConfigReader) -> EncoderConfig:
        if r.bool("pre_norm", False):
            r.refuse("pre_norm", "transformers' own pre-norm FlauBERT fails to run: no reference")
        return super().read(r)


FAMILIES = [
    Family(
        "flaubert",
        XlmModel,
        "XLM's post-norm encoder",
        ("flaubert/flaubert_base_cased", "flaubert/flaubert_base_uncased"),
        rules=FlaubertRules(),
        task="feature-extraction",
        category="encoder",
        unused=(r"(transformer\.)?position_ids", r"pred_layer\.proj\.weight"),
        prefix="transformer.",
    ),
]

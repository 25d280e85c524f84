"""OLMo 2: norms after attention and MLP (not before), q/k RMSNorm over the whole projection."""

from converter.config import ConfigRules
from converter.models.decoder import DecoderLM
from converter.registry import Family

FAMILIES = [
    Family(
        "olmo2",
        DecoderLM,
        "post-norms, q/k RMSNorm over the whole projection",
        ("allenai/OLMo-2-0425-1B",),
        rules=ConfigRules(layout="post", qk_norm="full"),
        genai="olmo",
    ),
]

"""OLMo 2: norms after attention and MLP (not before), q/k RMSNorm over the whole projection;
OLMo 3 adds sliding windows on three layers of four, whose rope has no scaling."""

from converter.config import FULL, SLIDING, ConfigReader, ConfigRules, Rope, parse_local_rope
from converter.models.decoder import DecoderLM
from converter.registry import Family


class Olmo3Rules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return SLIDING if window is not None and (index + 1) % 4 else FULL

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        # an old-style rope_theta/rope_scaling names the full-attention layers' rope only
        return parse_local_rope(r.raw, head_dim=head_dim)


_OLMO2 = {"layout": "post", "qk_norm": "full"}
FAMILIES = [
    Family(
        "olmo2",
        DecoderLM,
        "post-norms, q/k RMSNorm over the whole projection",
        ("allenai/OLMo-2-0425-1B",),
        rules=ConfigRules(**_OLMO2),
        genai="olmo",
    ),
    Family(
        "olmo3",
        DecoderLM,
        "OLMo 2 with sliding windows on 3 layers of 4, unscaled rope on those",
        ("allenai/Olmo-3-1025-7B",),
        rules=Olmo3Rules(**_OLMO2),
    ),
]

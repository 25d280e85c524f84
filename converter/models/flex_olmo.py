"""FlexOlmo: OLMo 2 (norms after attention and MLP, q/k RMSNorm over the whole projection)
whose MLPs are experts, each token running its top-k by softmax."""

from converter.config.moe import MoeRules
from converter.models.decoder import DecoderLM
from converter.registry import Family

FAMILIES = [
    Family(
        "flex_olmo",
        DecoderLM,
        "OLMo 2's post-norms and q/k norms with experts in every layer (softmax top-k)",
        ("allenai/FlexOlmo-7x7B-1T",),
        rules=MoeRules(layout="post", qk_norm="full", expert_size_keys=("intermediate_size",)),
        category="moe",
    ),
]

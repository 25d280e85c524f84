"""OLMoE: Llama with q/k RMSNorm over the whole projection and experts in every layer."""

from converter.config.moe import MoeRules
from converter.models.decoder import DecoderLM
from converter.registry import Family

FAMILIES = [
    Family(
        "olmoe",
        DecoderLM,
        "experts in every layer (softmax top-k); q/k RMSNorm over the whole projection",
        ("allenai/OLMoE-1B-7B-0924",),
        rules=MoeRules(qk_norm="full", expert_size_keys=("intermediate_size",)),
        category="moe",
    ),
]

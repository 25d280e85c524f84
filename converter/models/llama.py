"""Llama and the families that are Llama with other numbers: the generic decoder as is."""

from converter.models.decoder import DecoderLM
from converter.registry import Family

FAMILIES = [
    Family(
        "llama",
        DecoderLM,
        "RMSNorm, SwiGLU, GQA; rope default/linear/dynamic/llama3/yarn",
        ("meta-llama/Llama-3.2-1B", "HuggingFaceTB/SmolLM2-135M"),
    ),
    Family("mistral", DecoderLM, "sliding-window attention", ("mistralai/Mistral-7B-v0.1",)),
    Family(
        "granite",
        DecoderLM,
        "embedding/residual/attention/logit multipliers",
        ("ibm-granite/granite-3.1-2b-instruct",),
    ),
]

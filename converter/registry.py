"""Registry: Hugging Face `model_type` -> family (model class, default task, runtime facts).

docs/supported-models.md is generated from this table (scripts/gen_supported_models.py).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from converter.errors import UnsupportedModelError
from converter.models.decoder import DecoderLM
from converter.models.gpt2 import GPT2LM
from converter.models.phi import PhiLM


@dataclass(frozen=True)
class Family:
    model_type: str
    model_class: type
    task: str
    genai_type: str  # onnxruntime-genai's `model.type`
    notes: str  # what sets the family apart, for the docs
    examples: tuple[str, ...]  # Hub ids shown in the docs
    unused: tuple[str, ...] = ()  # checkpoint tensors this family never reads (regexes)
    prefix: str = ""  # base-model prefix some checkpoints omit


def _family(model_type, genai_type, notes, *examples, model_class=DecoderLM, **kw) -> Family:
    return Family(model_type, model_class, "text-generation", genai_type, notes, examples, **kw)


FAMILIES: dict[str, Family] = {
    f.model_type: f
    for f in (
        _family(
            "llama",
            "llama",
            "RMSNorm, SwiGLU, GQA; rope default/linear/dynamic/llama3/yarn",
            "meta-llama/Llama-3.2-1B",
            "HuggingFaceTB/SmolLM2-135M",
        ),
        _family("mistral", "mistral", "sliding-window attention", "mistralai/Mistral-7B-v0.1"),
        _family("qwen2", "qwen2", "q/k/v biases", "Qwen/Qwen2.5-0.5B-Instruct"),
        _family("qwen3", "qwen3", "per-head q/k RMSNorm", "Qwen/Qwen3-0.6B"),
        _family(
            "phi3",
            "phi3",
            "fused qkv and gate_up projections, LongRoPE, partial rotary",
            "microsoft/Phi-3-mini-4k-instruct",
            "microsoft/Phi-4-mini-instruct",
        ),
        _family("gemma", "gemma", "scaled embeddings, GeGLU, (1+w) RMSNorm", "google/gemma-2b"),
        _family(
            "gemma2",
            "gemma2",
            "attention/final logit softcaps, pre+post norms, alternating sliding window",
            "google/gemma-2-2b-it",
        ),
        _family(
            "gemma3_text",
            "gemma3_text",
            "q/k norms, local/global rope bases, 5:1 sliding window",
            "google/gemma-3-1b-it",
        ),
        _family(
            "granite",
            "granite",
            "embedding/residual/attention/logit multipliers",
            "ibm-granite/granite-3.1-2b-instruct",
        ),
        _family(
            "olmo2",
            "olmo",
            "post-norms, q/k RMSNorm over the whole projection",
            "allenai/OLMo-2-0425-1B",
        ),
        _family(
            "gpt2",
            "gpt2",
            "learned absolute positions, LayerNorm, fused Conv1D c_attn",
            "openai-community/gpt2",
            model_class=GPT2LM,
            unused=(r"(transformer\.)?h\.\d+\.attn\.(masked_)?bias",),
            prefix="transformer.",
        ),
        _family(
            "phi",
            "phi",
            "parallel attention+MLP, partial rotary, LayerNorm",
            "microsoft/phi-2",
            model_class=PhiLM,
        ),
    )
}


def family_for(model_type: str) -> Family:
    """The registered family, or an error listing the nearest supported types."""
    family = FAMILIES.get(model_type)
    if family is None:
        near = difflib.get_close_matches(model_type, FAMILIES, n=3, cutoff=0.5)
        hint = f"; nearest supported: {', '.join(near)}" if near else ""
        raise UnsupportedModelError(
            f"model_type {model_type!r} is not supported{hint} "
            f"(run `mobius list models` for all {len(FAMILIES)})"
        )
    return family

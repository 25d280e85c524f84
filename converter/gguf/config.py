"""A GGUF file's metadata as the Hugging Face config.json its architecture would have, so the
family's own config rules read it (the same path as a safetensors build).

GGUF keys are `{arch}.…` (llama.cpp's names). What GGUF does not record takes llama.cpp's own
assumption: Gemma 2/3 scale queries by 1/sqrt(head_dim), except the 27B models (told apart by
their layer count) by 1/sqrt(hidden / heads); Gemma 3's local layers use rope base 10000 and
every 6th layer is global, Gemma 2 alternates.
"""

from __future__ import annotations

from typing import Any

from converter.errors import UnsupportedModelError, WeightsError
from converter.gguf.reader import GgufFile

# GGUF architecture -> transformers model_type. llama.cpp writes Mistral checkpoints as llama.
MODEL_TYPES = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
}
# every n-th layer attends globally, the others through the sliding window
DEFAULT_SWA_PATTERN = {"gemma2": 2, "gemma3": 6}
LAYERS_27B = {"gemma2": 46, "gemma3": 62}
GEMMA = ("gemma", "gemma2", "gemma3")
ROPE_FACTORS = ("rope_factors_long.weight", "rope_factors_short.weight")
ROPE_FREQS = "rope_freqs.weight"


def model_type_of(gguf: GgufFile) -> str:
    arch = gguf.architecture
    if arch not in MODEL_TYPES:
        raise UnsupportedModelError(
            f"GGUF architecture '{arch}' is not supported; build-gguf reads "
            f"{', '.join(sorted(MODEL_TYPES))}"
        )
    return MODEL_TYPES[arch]


def hf_config(gguf: GgufFile) -> dict[str, Any]:
    """The config.json a Hugging Face checkpoint of this model would carry."""
    model_type, arch, meta = model_type_of(gguf), gguf.architecture, gguf.metadata

    def key(name: str, default: Any = None, required: bool = False) -> Any:
        value = meta.get(f"{arch}.{name}", default)
        if required and value is None:
            raise WeightsError(f"{gguf.path.name} lacks the metadata key {arch}.{name}")
        return value

    heads = key("attention.head_count", required=True)
    hidden = key("embedding_length", required=True)
    head_dim = key("attention.key_length", hidden // heads)
    embeddings = gguf.tensors.get("token_embd.weight")
    if embeddings is None:
        raise WeightsError(f"{gguf.path.name} has no token_embd.weight")
    raw: dict[str, Any] = {
        "model_type": model_type,
        "vocab_size": embeddings.shape[0],
        "hidden_size": hidden,
        "intermediate_size": key("feed_forward_length", required=True),
        "num_hidden_layers": key("block_count", required=True),
        "num_attention_heads": heads,
        "num_key_value_heads": key("attention.head_count_kv", heads),
        "head_dim": head_dim,
        "max_position_embeddings": key("context_length", 2048),
        "rms_norm_eps": key("attention.layer_norm_rms_epsilon", 1e-6),
        "rope_theta": key("rope.freq_base", 10_000.0),
        "tie_word_embeddings": "output.weight" not in gguf.tensors,
        **_token_ids(meta),
    }
    rotary = key("rope.dimension_count")
    if rotary is not None and rotary != head_dim:
        raw["partial_rotary_factor"] = rotary / head_dim
    if "blk.0.attn_q.bias" in gguf.tensors and arch == "llama":
        raw["attention_bias"] = True
    raw.update(_rope_scaling(gguf, key))
    if arch in GEMMA:
        raw["hidden_activation"] = "gelu_pytorch_tanh"
    if arch in DEFAULT_SWA_PATTERN:
        raw.update(_gemma_attention(gguf, key, raw))
    if arch == "phi3" and key("attention.sliding_window") is not None:
        raw["sliding_window"] = key("attention.sliding_window")
    return raw


def _token_ids(meta: dict[str, Any]) -> dict[str, int]:
    ids = {}
    for hf, gguf_key in (("bos", "bos"), ("eos", "eos"), ("pad", "padding")):
        value = meta.get(f"tokenizer.ggml.{gguf_key}_token_id")
        if isinstance(value, int):
            ids[f"{hf}_token_id"] = value
    return ids


def _rope_scaling(gguf: GgufFile, key) -> dict[str, Any]:
    if ROPE_FREQS in gguf.tensors:
        # Llama 3's rope scaling, which llama.cpp stores as one divisor per frequency: the
        # same divisors at every length, i.e. LongRoPE with one set of factors and no
        # attention scaling
        factors = _floats(gguf, ROPE_FREQS)
        scaling = {"rope_type": "longrope", "short_factor": factors, "long_factor": factors}
        return {"rope_scaling": {**scaling, "attention_factor": 1.0}}
    if all(name in gguf.tensors for name in ROPE_FACTORS):  # Phi-3's LongRoPE factors
        long, short = (_floats(gguf, name) for name in ROPE_FACTORS)
        return {
            "rope_scaling": {"type": "longrope", "long_factor": long, "short_factor": short},
            "original_max_position_embeddings": key(
                "rope.scaling.original_context_length", required=True
            ),
        }
    kind = key("rope.scaling.type")
    if kind in (None, "none"):
        return {}
    factor = key("rope.scaling.factor", required=True)
    if kind == "linear":
        return {"rope_scaling": {"rope_type": "linear", "factor": factor}}
    if kind == "yarn":
        original = key("rope.scaling.original_context_length", required=True)
        scaling = {"rope_type": "yarn", "factor": factor}
        return {"rope_scaling": {**scaling, "original_max_position_embeddings": original}}
    raise WeightsError(f"{gguf.path.name}: rope scaling type '{kind}' is not supported")


def _floats(gguf: GgufFile, name: str) -> list[float]:
    tensor = gguf.tensors[name]
    if tensor.type != "F32" or len(tensor.shape) != 1:
        raise WeightsError(f"{name} must be a 1-D F32 tensor, not {tensor.type} {tensor.shape}")
    return tensor.data.astype(float).tolist()


def _gemma_attention(gguf: GgufFile, key, config: dict[str, Any]) -> dict[str, Any]:
    layers, arch = config["num_hidden_layers"], gguf.architecture
    if layers == LAYERS_27B[arch]:
        scalar = config["hidden_size"] // config["num_attention_heads"]
    else:
        scalar = config["head_dim"]
    pattern = key("attention.sliding_window_pattern", DEFAULT_SWA_PATTERN[arch])
    if isinstance(pattern, list):  # one flag per layer: True for a sliding-window layer
        sliding = [bool(flag) for flag in pattern]
    else:
        sliding = [pattern == 0 or i % pattern < pattern - 1 for i in range(layers)]
    raw: dict[str, Any] = {
        "sliding_window": key("attention.sliding_window", required=True),
        "layer_types": ["sliding_attention" if s else "full_attention" for s in sliding],
        "query_pre_attn_scalar": scalar,
    }
    for name in ("attn_logit_softcapping", "final_logit_softcapping"):
        if key(name) is not None:
            raw[name] = key(name)
    if arch == "gemma3":
        raw["rope_local_base_freq"] = key("rope.freq_base_swa", 10_000.0)
    return raw

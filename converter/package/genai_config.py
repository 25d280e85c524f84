"""genai_config.json: what onnxruntime-genai reads to run a text-generation package, or a
vision-language one (its `vision` and `embedding` sections beside the decoder's).

Built from the decoder component (its file, its I/O names, its layers' caches), the other
components' files and names, and the config; onnxruntime-genai refuses keys it does not know,
so only the fields it reads are written. A decoder family onnxruntime-genai does not name runs
as its generic "decoder" type.
"""

from __future__ import annotations

from typing import Any

from converter.errors import MobiusError
from converter.execution_providers import GQA
from converter.package.processor_config import PROCESSOR_CONFIG, WRITERS

GENAI_CONFIG = "genai_config.json"
_SEARCH_KEYS = ("do_sample", "temperature", "top_k", "top_p", "repetition_penalty")


def genai_config(package, generation: dict[str, Any]) -> dict[str, Any]:
    """The config of `package` (a ModelPackage), with `generation` (generation_config.json)."""
    cfg = getattr(package.config, "text", package.config)  # a VLM's decoder reads its text's
    [decoder] = [c for c in package.components if c.role == "decoder"]
    kv_heads, head_size = _declared_cache(decoder.caches)
    eos = generation.get("eos_token_id", list(cfg.eos_token_id))
    eos = eos if isinstance(eos, list) else [eos]
    pad = generation.get("pad_token_id", cfg.pad_token_id)
    pad = pad if pad is not None else (eos[0] if eos else 0)
    bos = generation.get("bos_token_id", cfg.bos_token_id)
    # a static cache's graph holds max_seq_len slots: genai sizes its shared buffer by max_length
    length = getattr(package.task, "max_seq_len", None) or cfg.max_position_embeddings
    search = {"max_length": length, "num_beams": 1, "do_sample": False}
    search.update({k: generation[k] for k in _SEARCH_KEYS if generation.get(k) is not None})
    attending = sum(cache.attends for cache in decoder.caches)
    model_class = package.family.model_class
    fields = getattr(model_class, "genai_fields", lambda cfg, section: {})
    return {
        "model": {
            **fields(package.config, "model"),
            "type": package.family.genai_type,
            "bos_token_id": bos if bos is not None else pad,
            "eos_token_id": eos if len(eos) != 1 else eos[0],
            "pad_token_id": pad,
            "vocab_size": cfg.logits_size,
            "context_length": cfg.max_position_embeddings,
            "decoder": {
                "filename": decoder.filename,
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "head_size": head_size,
                "hidden_size": cfg.hidden_size,
                "num_attention_heads": cfg.num_attention_heads,
                "num_key_value_heads": kv_heads,
                "num_hidden_layers": len(decoder.caches),
                **fields(package.config, "decoder"),
                **decoder.io,
            },
            **{
                c.role: {
                    "filename": c.filename,
                    **fields(package.config, c.role),
                    **processor_file(package, c.role),
                    "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                    **c.io,
                }
                for c in package.components
                if c.role in ("vision", "embedding")
            },
        },
        # GroupQueryAttention updates a max-length cache in place; the standard op concats.
        "search": {
            "past_present_share_buffer": package.lowering.fusions.get(GQA, 0) == attending,
            **search,
        },
    }


def processor_file(package, role: str) -> dict:
    """The vision section names the processor_config.json the package writes for it."""
    if role == "vision" and package.family.genai_type in WRITERS:
        return {"config_filename": PROCESSOR_CONFIG}
    return {}


def _declared_cache(caches) -> tuple[int, int]:
    """(kv heads, head size) genai_config declares: the first layer's. Where layers differ
    (Gemma 4), onnxruntime-genai reads each layer's shape from the graph's cache inputs."""
    if any(c.key[-1] != c.value[-1] for c in caches):
        # measured with 0.18: it allocates every past and present with the one head_size
        raise MobiusError("onnxruntime-genai needs keys and values of one head size")
    return caches[0].key[0], caches[0].key[-1]

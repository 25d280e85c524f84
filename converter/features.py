"""Build features: cargo-style toggles (`--features a,b` or repeated) that change what a build
makes. Each is refused by name where it means nothing for the model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from converter.errors import ConfigError
from converter.execution_providers import ExecutionProvider
from converter.registry import Family, family_for
from converter.tasks.text_generation import TextGenerationTask
from converter.weights import Checkpoint

TEXT_ONLY = "text-only"
FP8_KV_CACHE = "fp8-kv-cache"
PRUNE_PREFILL = "prune-prefill-prefix"
STATIC_CACHE = "static-cache"
FEATURES = {
    TEXT_ONLY: "export only a multimodal model's text decoder, to run as a plain LLM",
    FP8_KV_CACHE: "keep the key/value cache as float8 e4m3fn with per-head scales (half an f16 "
    "cache's bytes)",
    PRUNE_PREFILL: "logits for each row's last position only: the LM head multiplies one row",
    STATIC_CACHE: "key/value caches of a fixed --max-seq-len, written in place (never grown)",
}


def parse_features(values: Iterable[str] | str | None) -> frozenset[str]:
    """The features named by `values` (each item may hold several, comma-separated)."""
    if values is None:
        return frozenset()
    items = [values] if isinstance(values, str) else list(values)
    names = {name.strip() for item in items for name in item.split(",") if name.strip()}
    for name in sorted(names):
        if name not in FEATURES:
            raise ConfigError(
                f"unknown feature {name!r}: the features are {', '.join(sorted(FEATURES))}"
            )
    return frozenset(names)


def text_only(family: Family, cfg, checkpoint: Checkpoint):
    """The text decoder's family, config and checkpoint view of the multimodal `family`: the
    text model's tensors under its own names, the vision tower's left unread."""
    if family.category != "vlm":
        raise ConfigError(
            f"feature {TEXT_ONLY!r}: {family.model_type} is not a multimodal model, its export "
            "is already text only"
        )
    text_family = family_for(cfg.text_type)
    text_cfg = cfg.text
    if text_cfg.rope is not None and text_cfg.rope.mrope_section:
        # text tokens have the same position in each of multimodal rope's three rows: one row
        # turning every frequency is the same rotation
        text_cfg = replace(text_cfg, rope=replace(text_cfg.rope, mrope_section=None))
    # a VLM's canonical layout has the text model under language_model.; the rest (towers,
    # projectors) goes under unread.
    apart = ((r"^(?!language_model\.)", "unread."), (r"^language_model\.", ""))
    return text_family, text_cfg, checkpoint.renamed(apart).renamed(text_family.renames)


def fp8_kv_cache(task, ep: ExecutionProvider) -> TextGenerationTask:
    """`task` keeping its caches as float8 (converter/components/fp8_cache.py)."""
    if not isinstance(task, TextGenerationTask):
        raise ConfigError(
            f"feature {FP8_KV_CACHE!r}: the {task.name} task has no text-generation decoder "
            "whose key/value cache it could store (a multimodal model's text decoder: add "
            f"{TEXT_ONLY!r})"
        )
    if ep.fp8_cache_refusal:
        raise ConfigError(f"feature {FP8_KV_CACHE!r} on {ep.name}: {ep.fp8_cache_refusal}")
    return replace(task, kv_cache_dtype="float8e4m3fn")


def prune_prefill(task):
    """`task` asking for the last position's logits alone: text generation's, and a
    vision-language model's decoder's (the tasks whose decoder-only graph has a prefill)."""
    if not hasattr(task, "last_logits_only"):
        raise ConfigError(
            f"feature {PRUNE_PREFILL!r} is for text generation and vision-language decoders, "
            f"not the {task.name} task"
        )
    return replace(task, last_logits_only=True)


UNREAD = r"unread\..+"  # what a text-only build leaves in the checkpoint


def static_cache_size(features: frozenset[str], task: Any, max_seq_len: int | None) -> int | None:
    """The static cache's size a build asks for (None: no static cache), checked before any
    download: by the features with `max_seq_len`, or by a task object's own."""
    own = getattr(task, "max_seq_len", None)
    if STATIC_CACHE not in features and not getattr(task, "static_cache", False):
        if max_seq_len is not None:
            raise ConfigError(
                "max_seq_len (--max-seq-len) sizes the static cache: it needs the "
                f"{STATIC_CACHE!r} feature"
            )
        return None
    if None not in (max_seq_len, own) and max_seq_len != own:
        raise ConfigError(f"max_seq_len {max_seq_len} differs from the task's max_seq_len {own}")
    size = own if max_seq_len is None else max_seq_len
    TextGenerationTask(static_cache=True, max_seq_len=size)  # refuses a size that is none
    if getattr(task, "name", task) not in (None, TextGenerationTask.name):
        raise _not_text_generation(getattr(task, "name", task))
    return size


def with_static_cache(task: Any, size: int | None):
    """`task` keeping its caches at `size` slots (unchanged for None)."""
    if size is None:
        return task
    if not isinstance(task, TextGenerationTask):
        raise _not_text_generation(task.name)
    return replace(task, static_cache=True, max_seq_len=size)


def _not_text_generation(task_name: str) -> ConfigError:
    return ConfigError(
        f"feature {STATIC_CACHE!r} applies to text-generation (a decoder-only LM's cache), "
        f"not to {task_name}"
    )

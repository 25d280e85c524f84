"""Registry: Hugging Face `model_type` -> Family (model class, task, config rules, runtime facts).

Each module of `converter.models` declares its families in a `FAMILIES` list; the registry
imports them all, so adding a family is adding (or extending) one module. docs/supported-models.md
is generated from this table (scripts/gen_docs.py).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil
from dataclasses import dataclass, field

from converter.config.architecture import ConfigRules
from converter.errors import UnsupportedModelError

# onnxruntime-genai's own names for decoder-only LLMs (model.type in genai_config.json); any
# other decoder-only family runs as its generic "decoder" type. ("gpt2" is one of its names, but
# genai 0.18 under it looks for an input our graph does not have: GPT-2 runs as "decoder".)
GENAI_DECODER_TYPES = frozenset(
    {
        "chatglm",
        "ernie4_5",
        "gemma",
        "gemma2",
        "gemma3_text",
        "gptoss",
        "granite",
        "llama",
        "mistral",
        "nemotron",
        "olmo",
        "phi",
        "phi3",
        "phi3small",
        "phimoe",
        "qwen2",
        "qwen3",
        "smollm3",
    }
)
VLM_SCOPE = "image-text-to-text"  # the task and coverage scope of vision-language models
GENERATIVE = ("text-generation", VLM_SCOPE)  # the tasks onnxruntime-genai may run
# onnxruntime-genai's vision-language types (vision, embedding and decoder graphs); a VLM
# family it does not name gets a plain onnxruntime package
GENAI_VLM_TYPES = frozenset({"gemma3", "mistral3", "phi3v", "qwen2_5_vl", "qwen3_vl"})


@dataclass(frozen=True)
class Family:
    model_type: str
    model_class: type
    notes: str  # what sets the family apart, for the docs
    examples: tuple[str, ...] = ()  # Hub ids shown in the docs
    rules: ConfigRules = field(default_factory=ConfigRules)  # how its config.json reads
    task: str = "text-generation"
    category: str = "dense"  # one of converter.not_yet.CATEGORIES
    genai: str | None = None  # onnxruntime-genai's model.type when it differs from model_type
    unused: tuple[str, ...] = ()  # checkpoint tensors this family never reads (regexes)
    prefix: str = ""  # base-model prefix some checkpoints omit
    reference_attention: str = "eager"  # transformers' attention implementation to compare with
    # (pattern, replacement) rewrites of checkpoint names onto the module paths, applied in
    # order: the other layouts a family's checkpoints come in (converter/weights.py)
    renames: tuple[tuple[str, str], ...] = ()

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks it converts for: an encoder's heads, else its one task."""
        return tuple(sorted(getattr(self.model_class, "heads", (self.task,))))

    def make_model(self, cfg, dtype, ep, task: str, tensors: frozenset[str]):
        """The model module for `task` (encoders build the task's head; `tensors`, the
        checkpoint's names, say which optional parts it has)."""
        if self.task == "text-generation":
            return self.model_class(cfg, dtype, ep)
        return self.model_class(cfg, dtype, ep, task, tensors)

    @property
    def genai_type(self) -> str | None:
        """onnxruntime-genai's model.type: its own name, else its generic "decoder" (text
        generation); None for a VLM it has no type for."""
        name = self.genai or self.model_type
        if self.task == VLM_SCOPE:
            return name if name in GENAI_VLM_TYPES else None
        return name if name in GENAI_DECODER_TYPES else "decoder"


@functools.cache
def families() -> dict[str, Family]:
    """Every family declared by a module of converter.models, by model_type."""
    import converter.models

    found: dict[str, Family] = {}
    for info in pkgutil.iter_modules(converter.models.__path__):
        module = importlib.import_module(f"converter.models.{info.name}")
        for family in getattr(module, "FAMILIES", ()):
            if family.model_type in found:
                raise RuntimeError(f"model_type {family.model_type!r} is declared twice")
            found[family.model_type] = family
    return dict(sorted(found.items()))


def family_for(model_type: str) -> Family:
    """The registered family, or an error listing the nearest supported types."""
    registered = families()
    family = registered.get(model_type)
    if family is None:
        near = difflib.get_close_matches(model_type, registered, n=3, cutoff=0.5)
        hint = f"; nearest supported: {', '.join(near)}" if near else ""
        raise UnsupportedModelError(
            f"model_type {model_type!r} is not supported{hint} "
            f"(run `mobius list models` for all {len(registered)})"
        )
    return family


# The EPs each family's parity tests run on (tests/parity); the others are checked structurally.
PARITY_EPS = ("default", "cpu")


def coverage() -> list[dict]:
    """One row per model type and scope, supported or not yet: what docs/supported-models.md
    and `mobius list models --json` show. A type may be supported for its encoder tasks and
    not yet for text generation (BERT's causal-LM head), or as an encoder-decoder and not yet
    as an encoder (BART's masked-LM mapping), so the row says which `scope`."""
    from converter.not_yet import NOT_YET
    from converter.not_yet_encoders import ENCODER_NOT_YET
    from converter.not_yet_seq2seq import SEQ2SEQ_NOT_YET
    from converter.not_yet_vlm import VLM_NOT_YET

    rows = [
        {
            "model_type": model_type,
            "status": "supported",
            "scope": scope_of(family),
            "category": family.category,
            "task": family.task,
            "tasks": list(family.tasks),
            "genai_type": family.genai_type if family.task in GENERATIVE else None,
            "parity_eps": list(PARITY_EPS),
            "notes": family.notes,
            "examples": list(family.examples),
        }
        for model_type, family in families().items()
    ]
    tables = (
        ("text-generation", NOT_YET),
        ("encoders", ENCODER_NOT_YET),
        ("seq2seq", SEQ2SEQ_NOT_YET),
        (VLM_SCOPE, VLM_NOT_YET),
    )
    for scope, table in tables:
        rows += [
            {
                "model_type": model_type,
                "status": "not yet",
                "scope": scope,
                "category": category,
                "reason": reason,
            }
            for model_type, (category, reason) in table.items()
        ]
    return sorted(rows, key=lambda row: (row["model_type"], row["scope"]))


SCOPES = ("text-generation", "encoders", "seq2seq", VLM_SCOPE)


def scope_of(family: Family) -> str:
    """The coverage scope a family counts under: text generation, the vision-language models
    (their task is image-text-to-text), the encoder-decoders (their model class says
    `coverage_scope = "seq2seq"`), or the encoders."""
    if family.task in ("text-generation", VLM_SCOPE):
        return family.task
    return getattr(family.model_class, "coverage_scope", "encoders")


def refuse_vision_language(model_type: str, text_type: object) -> UnsupportedModelError:
    """The error for a config with `vision_config` and `text_config` whose own type is not
    registered: it is never converted as its text model (`text_type`) in its place. Names the
    reason the type is not yet supported where a not-yet table lists it."""
    from converter.not_yet import NOT_YET
    from converter.not_yet_encoders import ENCODER_NOT_YET
    from converter.not_yet_seq2seq import SEQ2SEQ_NOT_YET
    from converter.not_yet_vlm import VLM_NOT_YET

    tables = (VLM_NOT_YET, ENCODER_NOT_YET, SEQ2SEQ_NOT_YET, NOT_YET)
    listed = next((table[model_type] for table in tables if model_type in table), None)
    why = f": {listed[1]}" if listed else ": mobius does not know this type"
    return UnsupportedModelError(
        f"model_type {model_type!r} is a vision-language model (config.json has vision_config "
        f"and text_config) that is not supported yet{why}. It is not converted as its text "
        f"model ({text_type!r}) in its place"
    )

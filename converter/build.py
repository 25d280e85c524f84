"""build(): a model id or folder in, a ModelPackage out."""

from __future__ import annotations

import json

from converter.config import ConfigReader, check_generation_config, model_type_of
from converter.dtypes import FLOAT_TYPES
from converter.errors import ConfigError
from converter.execution_providers import execution_provider
from converter.features import TEXT_ONLY, UNREAD, parse_features, text_only
from converter.lowering import Int4, LoweringReport, Plan, lower
from converter.package import ModelPackage
from converter.registry import family_for
from converter.source import resolve_source
from converter.tasks import TASKS
from converter.tasks.choice import task_of
from converter.weights import Checkpoint, bind

MAX_CONFIG_BYTES = 4 * 1024 * 1024


def build(
    model: str,
    *,
    ep: str = "default",
    dtype: str = "f32",
    revision: str | None = None,
    token: str | None = None,
    progress: bool = True,
    int4_block_size: int = 32,
    int4_symmetric: bool = True,
    int4_head_bits: int | None = 8,
    task=None,
    features=None,
    release: bool = False,
) -> ModelPackage:
    """Convert a Hub repo id or a local folder into an ONNX package (not yet saved).

    `ep` picks the graph (`default`: portable standard ops; `cpu`, `cuda`, `dml`,
    `webgpu`: that EP's fused kernels); `dtype` is f32, f16, bf16, int8 (dynamic int8:
    int8 weights, activations quantized at run time) or int4 (int4 weights with the EP's
    activation dtype; the LM head and token table in blocks of `int4_head_bits`, 8 or 4, None
    keeping them float). Unsupported pairs fail before any download. `task`
    names the task (`"fill-mask"`; default: the head config.json's `architectures` names, else
    the family's task) or is a task object (e.g. `TextGenerationTask(inputs_embeds=True)`).
    `features` names build features (converter/features.py: `["text-only"]`); `release` saves
    the graphs without debug and provenance metadata (converter/release.py).
    """
    provider = execution_provider(ep, dtype)
    features = parse_features(features)
    int4 = Int4(int4_block_size, int4_symmetric, int4_head_bits) if dtype == "int4" else None
    source = resolve_source(model, revision=revision, token=token, progress=progress)
    raw = read_config(source.path / "config.json")
    model_type = model_type_of(raw)
    family = family_for(model_type)
    cfg = family.rules.read(ConfigReader(family.rules.select(raw), model_type))
    if hasattr(cfg, "vocab_size"):  # image encoders have no tokens to check
        check_generation_config(source.path, cfg.vocab_size)
    checkpoint = Checkpoint(source.path).renamed(family.renames)
    if TEXT_ONLY in features:
        family, cfg, checkpoint = text_only(family, cfg, checkpoint)
    float_type = FLOAT_TYPES[provider.activation_dtype(dtype)]
    task_name = task_of(raw, family, task if isinstance(task, str) or task is None else task.name)
    task = TASKS[task_name] if task is None or isinstance(task, str) else task
    module = family.make_model(cfg, float_type, provider, task_name, frozenset(checkpoint.tensors))
    components = [c.saved_as(dtype) for c in task.components(module, cfg, float_type)]
    tied = getattr(cfg, "tie_word_embeddings", False)
    unused = (*family.unused, *getattr(module, "unused_tensors", tuple)())
    unused = (*unused, r"lm_head\.weight") if tied else unused
    unused = (*unused, UNREAD) if TEXT_ONLY in features else unused
    parameters = {id(p): p for c in components for p in c.module.parameters()}
    assemblies = {
        name: assembly
        for c in components
        for m in c.module.modules()
        if hasattr(m, "assemblies")
        for name, assembly in m.assemblies().items()
    }
    bind(
        parameters.values(),
        checkpoint,
        unused=unused,
        prefix=family.prefix,
        assemblies=assemblies,
    )
    report = LoweringReport()
    for component in components:
        plan = Plan(provider, int4, int8=dtype == "int8")
        report.merge(lower(component, plan, float_type))
    return ModelPackage(components, cfg, family, task, source, ep, dtype, report, features, release)


def read_config(path) -> dict:
    if not path.is_file():
        raise ConfigError(f"{path} is missing")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        raw = json.loads(path.read_text())
    except (ValueError, RecursionError) as err:  # RecursionError: absurdly deep nesting
        raise ConfigError(f"config.json is not valid JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError("config.json must hold a JSON object")
    return raw

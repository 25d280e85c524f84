"""build(): a model id or folder in, a ModelPackage out."""

from __future__ import annotations

import json

from converter.config import ConfigReader, check_generation_config, model_type_of
from converter.config.olive import read_olive
from converter.dtypes import FLOAT_TYPES
from converter.errors import ConfigError
from converter.execution_providers import MATMUL_NBITS, QMOE, execution_provider
from converter.features import (
    FP8_KV_CACHE,
    PRUNE_PREFILL,
    STATIC_CACHE,
    TEXT_ONLY,
    UNREAD,
    fp8_kv_cache,
    parse_features,
    prune_prefill,
    static_cache_size,
    text_only,
    with_static_cache,
)
from converter.lowering import Int4, LoweringReport, Plan, lower
from converter.olive_weights import olive_assemblies
from converter.package import ModelPackage
from converter.quantize import DEFAULT_METHOD
from converter.registry import family_for
from converter.source import Source, resolve_source
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
    int4_method: str = DEFAULT_METHOD,
    task=None,
    features=None,
    release: bool = False,
    max_seq_len: int | None = None,
) -> ModelPackage:
    """Convert a Hub repo id or a local folder into an ONNX package (not yet saved).

    `ep` picks the graph (`default`: portable standard ops; `cpu`, `cuda`, `dml`,
    `webgpu`: that EP's fused kernels); `dtype` is f32, f16, bf16, int8 (dynamic int8:
    int8 weights, activations quantized at run time) or int4 (int4 weights with the EP's
    activation dtype; the LM head and token table in blocks of `int4_head_bits`, 8 or 4, None
    keeping them float; `int4_method` "rtn" or "search" choosing the block scales,
    converter/quantize.py). Unsupported pairs fail before any download. `task`
    names the task (`"fill-mask"`; default: the head config.json's `architectures` names, else
    the family's task) or is a task object (e.g. `TextGenerationTask(inputs_embeds=True)`).
    `features` names build features (converter/features.py: `["text-only"]`,
    `["fp8-kv-cache"]`, the same as `TextGenerationTask(kv_cache_dtype="float8e4m3fn")`,
    `["prune-prefill-prefix"]`, `["static-cache"]` with `max_seq_len` sizing its caches);
    `release` saves the graphs without debug and provenance metadata (converter/release.py). A
    checkpoint Olive quantized (its config's `quantization_config`) keeps its packed weights
    (converter/olive_weights.py); `dtype` then names its activations.
    """
    execution_provider(ep, dtype)  # unsupported pairs and features fail before any download
    static_cache_size(parse_features(features), task, max_seq_len)
    int4 = None
    if dtype == "int4":
        int4 = Int4(int4_block_size, int4_symmetric, int4_head_bits, method=int4_method)
    source = resolve_source(model, revision=revision, token=token, progress=progress)
    return build_source(
        source,
        ep=ep,
        dtype=dtype,
        int4=int4,
        task=task,
        features=features,
        release=release,
        max_seq_len=max_seq_len,
    )


def build_source(
    source: Source,
    checkpoint: Checkpoint | None = None,
    *,
    ep: str,
    dtype: str,
    int4: Int4 | None = None,
    task=None,
    features=None,
    release: bool = False,
    max_seq_len: int | None = None,
) -> ModelPackage:
    """The build of `build()` from a resolved source: `source.path` holds config.json (and
    the tokenizer and generation files), `checkpoint` the tensors under their checkpoint names
    (None: the folder's safetensors, read once the config is known to be supported; a GGUF
    file's tensors); `int4` the int4 settings when `dtype` is int4."""
    provider = execution_provider(ep, dtype)
    features = parse_features(features)
    static_size = static_cache_size(features, task, max_seq_len)
    if static_size is not None:
        features |= {STATIC_CACHE}
    quantization = (int4 or Int4()) if dtype == "int4" else None
    raw = read_config(source.path / "config.json")
    olive = read_olive(raw)
    if olive is not None:
        quantization = olive_plan(olive, provider, dtype)
    model_type = model_type_of(raw)
    family = family_for(model_type)
    cfg = family.rules.read(ConfigReader(family.rules.select(raw), model_type))
    if hasattr(cfg, "vocab_size"):  # image encoders have no tokens to check
        check_generation_config(source.path, cfg.vocab_size)
    checkpoint = (checkpoint or Checkpoint(source.path)).renamed(family.renames)
    if TEXT_ONLY in features:
        family, cfg, checkpoint = text_only(family, cfg, checkpoint)
    float_type = FLOAT_TYPES[provider.activation_dtype(dtype)]
    task_name = task_of(raw, family, task if isinstance(task, str) or task is None else task.name)
    task = TASKS[task_name] if task is None or isinstance(task, str) else task
    task = with_static_cache(task, static_size)
    if getattr(task, "kv_cache_dtype", None):  # the feature asked for by the task's option
        features = features | {FP8_KV_CACHE}
    if FP8_KV_CACHE in features:
        task = fp8_kv_cache(task, provider)
    if PRUNE_PREFILL in features:
        task = prune_prefill(task)
    if getattr(task, "last_logits_only", False):  # asked for by a task object: recorded alike
        features |= {PRUNE_PREFILL}
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
    if olive is not None:
        assemblies |= olive_assemblies(parameters.values(), checkpoint, olive, float_type)
    bind(
        parameters.values(),
        checkpoint,
        unused=unused,
        prefix=family.prefix,
        assemblies=assemblies,
    )
    report = LoweringReport()
    for component in components:
        plan = Plan(provider, quantization, int8=dtype == "int8")
        report.merge(lower(component, plan, float_type))
    return ModelPackage(
        components,
        cfg,
        family,
        task,
        source,
        ep,
        dtype,
        report,
        features,
        release,
        int4=quantization,
    )


def olive_plan(olive, provider, dtype: str) -> Int4:
    """The int4 plan binding an Olive checkpoint's packed weights (MatMulNBits, QMoE)."""
    if dtype not in FLOAT_TYPES:
        raise ConfigError(
            f"dtype {dtype!r}: an Olive-quantized checkpoint keeps its own quantization; "
            "build it with its activation dtype (f32, f16 or bf16)"
        )
    missing = [k for k in (MATMUL_NBITS, QMOE) if not provider.has(k)]
    if missing:
        raise ConfigError(
            f"an Olive-quantized checkpoint binds its packed weights into {' and '.join(missing)}"
            f", which execution provider {provider.name!r} does not have"
        )
    wide = olive.model_wide
    return Int4(wide.block_size, wide.symmetric, head_bits=None, prequantized=True)  # head: float


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

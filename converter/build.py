"""build(): a model id or folder in, a ModelPackage out."""

from __future__ import annotations

import json

import onnx_ir as ir

from converter.config import ArchitectureConfig, model_type_of
from converter.errors import ConfigError, MobiusError
from converter.package import ModelPackage
from converter.registry import family_for
from converter.source import resolve_source
from converter.tasks import TASKS
from converter.weights import Checkpoint, bind, pretranspose

DTYPES = {"f32": ir.DataType.FLOAT, "f16": ir.DataType.FLOAT16, "bf16": ir.DataType.BFLOAT16}
EXECUTION_PROVIDERS = ("default",)
_MAX_CONFIG_BYTES = 4 * 1024 * 1024


def build(
    model: str,
    *,
    ep: str = "default",
    dtype: str = "f32",
    revision: str | None = None,
    token: str | None = None,
    progress: bool = True,
) -> ModelPackage:
    """Convert a Hub repo id or a local folder into an ONNX package (not yet saved)."""
    if ep not in EXECUTION_PROVIDERS:
        raise MobiusError(f"unknown execution provider {ep!r}; choose from {EXECUTION_PROVIDERS}")
    if dtype not in DTYPES:
        raise MobiusError(f"unknown dtype {dtype!r}; choose from {tuple(DTYPES)}")
    source = resolve_source(model, revision=revision, token=token, progress=progress)
    raw = read_config(source.path / "config.json")
    family = family_for(model_type_of(raw))
    cfg = ArchitectureConfig.from_hf(raw)
    checkpoint = Checkpoint(source.path)
    ir_dtype = DTYPES[dtype]
    module = family.model_class(cfg, ir_dtype)
    task = TASKS[family.task]
    graph = task.build_graph(module, cfg, ir_dtype)
    unused = (*family.unused, r"lm_head\.weight") if cfg.tie_word_embeddings else family.unused
    bind(module.parameters(), checkpoint, unused=unused, prefix=family.prefix)
    pretranspose(graph)
    return ModelPackage(graph, cfg, family, task, source, ep, dtype)


def read_config(path) -> dict:
    if not path.is_file():
        raise ConfigError(f"{path} is missing")
    if path.stat().st_size > _MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is larger than {_MAX_CONFIG_BYTES} bytes")
    try:
        raw = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise ConfigError(f"config.json is not valid JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError("config.json must hold a JSON object")
    return raw

"""Readings the newer MoE families share: `mlp_layer_types` and checkpoint names that differ
from the module tree's."""

from __future__ import annotations

from converter.config import ConfigReader
from converter.errors import ConfigError
from converter.weights import Assembly


def mlp_layer_types(r: ConfigReader, layers: int, dense_first: int = 0) -> tuple[bool, ...]:
    """Per layer: experts ("sparse") or the dense MLP ("dense"); unset, the first
    `dense_first` layers dense and the rest sparse (the family's transformers default)."""
    kinds = r.raw.get("mlp_layer_types")
    if kinds is None:
        return tuple(i >= dense_first for i in range(layers))
    if not isinstance(kinds, list) or len(kinds) != layers or set(kinds) - {"sparse", "dense"}:
        raise ConfigError(f"'mlp_layer_types' must list 'sparse' or 'dense' for each of {layers}")
    return tuple(kind == "sparse" for kind in kinds)


def renamed(param, name: str) -> Assembly:
    """`param` read from the checkpoint tensor `name`, as it is."""
    return Assembly(((name, tuple(param.shape.dims)),), lambda arrays: arrays[0])

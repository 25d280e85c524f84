"""Gemma 4 settings the converter does not express are refused by name, and the full-attention
layers' shapes read from either spelling transformers accepts."""

from __future__ import annotations

import pytest
import transformers

from converter.config import ArchitectureConfig
from converter.errors import ConfigError
from tests.parity.cases import CASES


def _config(case: str = "gemma4_text", **overrides) -> dict:
    model_type = case.split(":")[0]
    config = transformers.AutoConfig.for_model(model_type, **CASES[case]).to_dict()
    return config | overrides


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("enable_moe_block", True),
        ("use_bidirectional_attention", "all"),
        ("num_kv_shared_layers", 3),  # every layer would reuse keys/values none computes
        ("per_layer_config", {"1": {"intermediate_size": 32}}),
        ("per_layer_config", {"1": {"skip": ["mlp"]}}),
    ],
)
def test_unexpressed_settings_are_refused_by_name(key, value):
    with pytest.raises(ConfigError, match=f"'{key}'"):
        ArchitectureConfig.from_hf(_config(**{key: value}))


def test_full_layer_shapes_from_global_head_dim_as_from_per_layer_config():
    saved = ArchitectureConfig.from_hf(_config("gemma4_text:head_dims"))
    older = _config("gemma4_text:head_dims", global_head_dim=32, num_global_key_value_heads=1)
    del older["per_layer_config"]
    assert (
        saved.layer_head_dims
        == (16, 32, 16, 32)
        == ArchitectureConfig.from_hf(older).layer_head_dims
    )
    assert saved.layer_kv_heads == (2, 1, 2, 1) == ArchitectureConfig.from_hf(older).layer_kv_heads
    assert saved.kv_sources == (None, None, 0, 1)

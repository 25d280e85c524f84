"""GPT-OSS and DBRX config reading: transformers' defaults where config.json is silent, and
the settings and sizes refused by name."""

from __future__ import annotations

import pytest
import transformers

from converter.config import ArchitectureConfig
from converter.errors import ConfigError

GPT_OSS = {
    "model_type": "gpt_oss",
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 32,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}
DBRX = {
    "model_type": "dbrx",
    "vocab_size": 128,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "attn_config": {"kv_n_heads": 2},
    "ffn_config": {"ffn_hidden_size": 32, "moe_num_experts": 8, "moe_top_k": 2},
}


def test_gpt_oss_layer_types_default_as_transformers():
    ours = ArchitectureConfig.from_hf(GPT_OSS)
    theirs = transformers.GptOssConfig(**{k: v for k, v in GPT_OSS.items() if k != "model_type"})
    assert list(ours.layer_types) == theirs.layer_types
    assert ours.moe.swiglu_limit == 7.0 and ours.moe.swiglu_alpha == 1.702
    assert ours.attention_sinks and ours.qkv_bias and ours.o_bias


def test_dbrx_reads_nested_settings():
    cfg = ArchitectureConfig.from_hf(
        {**DBRX, "attn_config": {"kv_n_heads": 2, "clip_qkv": 8.0, "rope_theta": 500000.0}}
    )
    assert (cfg.num_key_value_heads, cfg.clip_qkv, cfg.rope.theta) == (2, 8.0, 500000.0)
    assert (cfg.moe.num_experts, cfg.moe.top_k, cfg.moe.expert_size) == (8, 2, 32)
    assert cfg.moe.normalize and cfg.expert_norm == 1.0
    unnormalized = {**DBRX["ffn_config"], "moe_normalize_expert_weights": None}
    cfg = ArchitectureConfig.from_hf({**DBRX, "ffn_config": unnormalized})
    assert not cfg.moe.normalize and cfg.expert_norm is None


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({**GPT_OSS, "quantization_config": {"quant_method": "fp8"}}, "quant_method"),
        ({**GPT_OSS, "num_local_experts": 0}, "num_local_experts"),
        ({**GPT_OSS, "num_experts_per_tok": 9}, "top-k"),
        ({**DBRX, "ffn_config": {**DBRX["ffn_config"], "moe_num_experts": 0}}, "moe_num_experts"),
        ({**DBRX, "ffn_config": {**DBRX["ffn_config"], "moe_top_k": 9}}, "top-k"),
        (
            {**DBRX, "ffn_config": {**DBRX["ffn_config"], "ffn_act_fn": {"name": "gelu", "x": 1}}},
            "ffn_act_fn",
        ),
        (
            {**DBRX, "ffn_config": {**DBRX["ffn_config"], "moe_normalize_expert_weights": -1}},
            "moe_normalize_expert_weights",
        ),
    ],
)
def test_refused_by_name(config, named):
    with pytest.raises(ConfigError, match=named):
        ArchitectureConfig.from_hf(config)

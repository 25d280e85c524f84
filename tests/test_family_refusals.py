"""Settings a family's config can hold but the converter does not implement are refused by
name, before any weight is read (never converted as something else)."""

from __future__ import annotations

import pytest
import transformers

from converter.config import ArchitectureConfig
from converter.errors import ConfigError
from tests.parity.cases import CASES, model_type_of

_MPT_ATTN = CASES["mpt"]["attn_config"]
REFUSED = [
    ("mpt", {"attn_config": {**_MPT_ATTN, "attn_type": "multiquery_attention"}}, "attn_type"),
    ("mpt", {"attn_config": {**_MPT_ATTN, "alibi": False}}, "alibi"),
    ("mpt", {"attn_config": {**_MPT_ATTN, "qk_ln": True}}, "qk_ln"),
    ("mpt", {"attn_config": {**_MPT_ATTN, "prefix_lm": True}}, "prefix_lm"),
    ("mpt", {"attn_config": {**_MPT_ATTN, "alibi_bias_max": 4}}, "alibi_bias_max"),
    ("mpt", {"norm_type": "rmsnorm"}, "norm_type"),
    ("mpt", {"no_bias": False}, "no_bias"),
    ("mpt", {"logit_scale": 2.0}, "logit_scale"),
    ("falcon", {"new_decoder_architecture": True, "parallel_attn": False}, "parallel_attn"),
    ("falcon", {"num_ln_in_parallel_attn": 2}, "num_ln_in_parallel_attn"),
    ("falcon", {"num_ln_in_parallel_attn": 3}, "num_ln_in_parallel_attn"),
    ("bitnet", {"quantization_config": {"quant_method": "bitnet"}}, "quantization_config"),
    ("diffllama", {"num_key_value_heads": 1}, "num_key_value_heads"),
    ("hrm_text", {"attention_bias": True}, "attention_bias"),
    ("hrm_text", {"mlp_bias": True}, "mlp_bias"),
    ("hrm_text", {"L_cycles": 3}, "num_hidden_layers"),  # 12 caches for 16 runs
    ("dory", {"n_recurrent_layers": 6}, "n_recurrent_layers"),  # 2 + 6 + 2 layers of 4
    ("dory", {"recurrent_kv_cache_mode": "none"}, "recurrent_kv_cache_mode"),
    ("gemma3n_text", {"num_kv_shared_layers": 4}, "num_kv_shared_layers"),  # no full one left
    ("gemma3n_text", {"intermediate_size": [96, 64]}, "intermediate_size"),
    ("cohere2_moe", {"expert_selection_fn": "sparsemixer"}, "expert_selection_fn"),
    ("exaone_moe", {"sliding_window": None}, "sliding_window"),
    (
        "exaone_moe",
        {"sliding_window_pattern": "LLLG", "layer_types": None},
        "sliding_window_pattern",
    ),
    (
        "cohere2_moe",
        {"shared_expert_combination_strategy": "max"},
        "shared_expert_combination_strategy",
    ),
    ("deepseek_v2", {"topk_method": "noaux_tc"}, "topk_method"),
    ("deepseek_v2", {"norm_topk_prob": True}, "norm_topk_prob"),  # transformers ignores it
    ("deepseek_v3", {"moe_layer_freq": 2}, "moe_layer_freq"),  # transformers ignores it
    ("glm4_moe_lite", {"first_k_dense_replace": 2}, "first_k_dense_replace"),
    ("deepseek_v3", {"num_key_value_heads": 2}, "num_key_value_heads"),
]


@pytest.mark.parametrize(("case", "changes", "key"), REFUSED, ids=lambda v: str(v)[:40])
def test_an_unimplemented_setting_is_refused_by_name(case, changes, key):
    config = transformers.AutoConfig.for_model(model_type_of(case), **CASES[case]).to_dict()
    with pytest.raises(ConfigError, match=f"'{key}' = .* is not supported: "):
        ArchitectureConfig.from_hf(config | changes)


BAD_EXPERTS = [
    ("deepseek_v3", {"n_group": 3}, "'n_group' = 3 does not divide the 16 experts"),
    ("deepseek_v3", {"num_experts_per_tok": 17}, "picks 17 experts .* only 16"),
    ("deepseek_v3", {"n_group": 16, "topk_group": 8}, "'n_group' = 16 leaves one expert"),
    ("deepseek_v3", {"n_group": 4, "topk_group": 5}, "'topk_group' = 5 must be between"),
    ("deepseek_v3", {"n_routed_experts": 0}, "'n_routed_experts' = 0"),
    # one kept group of 2 experts cannot give a token 3
    ("deepseek_v2", {"topk_group": 1, "n_group": 4, "num_experts_per_tok": 3}, "exceeds"),
    ("glm4_moe_lite", {"mlp_layer_types": ["dense", "sparse"]}, "'mlp_layer_types' must"),
]


@pytest.mark.parametrize(("case", "changes", "message"), BAD_EXPERTS, ids=lambda v: str(v)[:40])
def test_inconsistent_experts_are_refused_at_config_reading(case, changes, message):
    config = transformers.AutoConfig.for_model(model_type_of(case), **CASES[case]).to_dict()
    with pytest.raises(ConfigError, match=message):
        ArchitectureConfig.from_hf(config | changes)

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
]


@pytest.mark.parametrize(("case", "changes", "key"), REFUSED, ids=lambda v: str(v)[:40])
def test_an_unimplemented_setting_is_refused_by_name(case, changes, key):
    config = transformers.AutoConfig.for_model(model_type_of(case), **CASES[case]).to_dict()
    with pytest.raises(ConfigError, match=f"'{key}' = .* is not supported: "):
        ArchitectureConfig.from_hf(config | changes)

"""Family readings of config.json that the parity cases cannot show, since transformers saves
its own spellings: the keys Hub repos spell otherwise (a configuration's `attribute_map`) read
as transformers reads them, and the options a family cannot honour are refused by name."""

from __future__ import annotations

import pytest
import transformers

from converter.config import ArchitectureConfig
from converter.errors import ConfigError
from tests.parity.cases import CASES

# {model_type: {key: (the Hub's spelling, a value other than the default)}}
HUB_SPELLINGS = {
    "exaone": {
        "num_hidden_layers": ("num_layers", 3),
        "rms_norm_eps": ("layer_norm_epsilon", 1e-3),
        "hidden_act": ("activation_function", "gelu"),
    },
    "internlm3": {"attention_bias": ("qkv_bias", True), "mlp_bias": ("bias", True)},
    # the original sarvamai/sarvam-105b names
    "sarvam_mla": {
        "n_routed_experts": ("num_experts", 16),
        "n_shared_experts": ("num_shared_experts", 2),
    },
}


@pytest.mark.parametrize("model_type", sorted(HUB_SPELLINGS))
def test_hub_spellings_read_as_transformers_reads_them(model_type: str) -> None:
    spellings = HUB_SPELLINGS[model_type]
    hub = {k: v for k, v in CASES[model_type].items() if k not in spellings}
    hub |= dict(spellings.values())
    expected = transformers.AutoConfig.for_model(model_type, **hub).to_dict()
    assert {key: expected[key] for key in spellings} == {
        key: value for key, (_, value) in spellings.items()
    }
    assert ArchitectureConfig.from_hf({"model_type": model_type, **hub}) == (
        ArchitectureConfig.from_hf(expected)
    )


REFUSED = [
    ("iquestcoder", {"clip_qkv": 8.0}, r"'clip_qkv' = 8.0 is not supported"),
    ("iquestcoder", {"use_sliding_window": True}, r"'use_sliding_window' = True is not supp"),
    (
        "ministral3",
        {"sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]},
        r"'layer_types' = \['sliding_attention', 'full_attention'\] is not supported",
    ),
    (
        "ministral3",
        {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}},
        r"'rope_parameters.llama_4_scaling_beta' must be a number >= 0, got None",
    ),
    (
        "apertus1p5_text",
        {"output_vocab_size": 96, "tie_word_embeddings": True},
        r"'output_vocab_size' = 96 is not supported: a pruned LM head cannot be tied",
    ),
    (
        "exaone4",
        {"sliding_window_pattern": "LLLG", "layer_types": None},
        r"'sliding_window_pattern' must be an integer, got 'LLLG'",
    ),
    ("ministral", {"head_dim": None}, r"'head_dim' is missing from config.json"),
    ("hunyuan_v1_dense", {"head_dim": None}, r"'head_dim' is missing from config.json"),
    ("minicpm3", {"qk_rope_head_dim": 7}, r"'qk_rope_head_dim' = 7 must be even"),
    ("minicpm3", {"kv_lora_rank": None}, r"'kv_lora_rank' is missing from config.json"),
    ("minicpm3", {"kv_lora_rank": 31}, r"'kv_lora_rank' = 31 must be even"),
    ("minicpm3", {"kv_lora_rank": 1 << 20}, r"'kv_lora_rank' = 1048576 is outside the sane"),
    ("minicpm3", {"q_lora_rank": 0}, r"'q_lora_rank' = 0 is outside the sane range"),
    ("minicpm3", {"v_head_dim": -1}, r"'v_head_dim' = -1 is outside the sane range"),
    (
        "minicpm3",
        {"num_key_value_heads": 2},
        r"'num_key_value_heads' = 2 is not supported: latent attention expands",
    ),
    ("minicpm3", {"partial_rotary_factor": 0.5}, r"'partial_rotary_factor': latent attention"),
    ("axk1", {"q_lora_rank": None}, r"'q_lora_rank' = None is not supported: A.X-K1's queries"),
]


# cases whose config.json on the Hub may give `first_k_dense_replace` and a pattern where
# transformers saves the layer lists it derives from them (`layer_types`, `mlp_layer_types`)
DERIVED_LAYER_LISTS = ["cohere2_moe", "cohere2_moe:sigmoid", "exaone_moe"]


@pytest.mark.parametrize("case", DERIVED_LAYER_LISTS)
def test_layer_lists_derive_as_transformers_derives_them(case: str) -> None:
    hub = {k: v for k, v in CASES[case].items() if k not in ("layer_types", "mlp_layer_types")}
    model_type = case.split(":")[0]
    expected = transformers.AutoConfig.for_model(model_type, **hub).to_dict()
    assert "first_k_dense_replace" in hub
    assert ArchitectureConfig.from_hf({"model_type": model_type, **hub}) == (
        ArchitectureConfig.from_hf(expected)
    )


@pytest.mark.parametrize(("model_type", "changes", "message"), REFUSED)
def test_options_a_family_cannot_honour_are_refused(model_type, changes, message) -> None:
    config = {"model_type": model_type, **CASES[model_type], **changes}
    with pytest.raises(ConfigError, match=message):
        ArchitectureConfig.from_hf(config)


@pytest.mark.parametrize(("first_dense", "every"), [(1, 2), (2, 1), (0, 3)])
def test_axk1_expert_layers_from_its_legacy_keys_as_transformers_derives_them(first_dense, every):
    hub = {**CASES["axk1"], "num_hidden_layers": 6}
    hub |= {"first_k_dense_replace": first_dense, "moe_layer_freq": every}
    expected = transformers.AutoConfig.for_model("axk1", **hub).mlp_layer_types
    moe = ArchitectureConfig.from_hf({"model_type": "axk1", **hub}).moe
    assert ["sparse" if sparse else "dense" for sparse in moe.sparse_layers] == expected

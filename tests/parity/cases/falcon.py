"""Parity cases of converter/models/falcon.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

_FALCON = {k: v for k, v in COMMON.items() if k not in ("intermediate_size", "num_key_value_heads")}
CASES = {
    # Falcon-7B's layout: multi-query, attention and MLP in parallel off one norm, rotary
    "falcon": {**_FALCON, "ffn_hidden_size": 96},
    # Falcon-40B's: kv groups, two norms (ln_attn, ln_mlp); biases, a scaled rope
    "falcon:new_layout": {
        **_FALCON,
        "new_decoder_architecture": True,
        "num_kv_heads": 2,
        "bias": True,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
    },
    "falcon:new_layout_one_norm": {
        **_FALCON,
        "new_decoder_architecture": True,
        "num_kv_heads": 2,
        "num_ln_in_parallel_attn": 1,
    },
    # multi-head, attention then MLP
    "falcon:sequential": {**_FALCON, "multi_query": False, "parallel_attn": False, "bias": True},
    # Falcon-RW's: ALiBi (rounded to bfloat16: twelve heads' slopes include odd powers of
    # 2^-0.5), multi-head, sequential, biases
    "falcon:alibi": {
        **_FALCON,
        "hidden_size": 192,
        "num_attention_heads": 12,
        "alibi": True,
        "multi_query": False,
        "parallel_attn": False,
        "bias": True,
        "tie_word_embeddings": False,
    },
}

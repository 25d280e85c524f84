"""Parity cases of DBRX: clamped fused Wqkv, fused expert stacks, p-norm top-k weights (p = 1
renormalizes, as the MoE kernel does; p = 2 is routed outside it)."""

FFN = {"ffn_hidden_size": 32, "moe_num_experts": 8, "moe_top_k": 2}
BASE = {
    "vocab_size": 128,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "max_seq_len": 64,
    "initializer_range": 0.1,
    "attn_config": {"kv_n_heads": 2, "clip_qkv": 0.5, "rope_theta": 10000.0},
    "ffn_config": FFN,
}

CASES = {
    "dbrx": BASE,
    "dbrx:p2": {**BASE, "ffn_config": {**FFN, "moe_normalize_expert_weights": 2.0}},
}

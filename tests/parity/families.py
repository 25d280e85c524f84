"""Tiny random configs, one or more per family, each exercising that family's twists."""

COMMON = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "initializer_range": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

CASES = {
    "llama": {
        **COMMON,
        "head_dim": 24,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 16,
        },
    },
    "mistral": {**COMMON, "head_dim": 24, "sliding_window": 4},
    "qwen2": {**COMMON, "tie_word_embeddings": True},
    "qwen3": {**COMMON, "head_dim": 24},
    "phi3": {
        **COMMON,
        "num_key_value_heads": 4,
        "partial_rotary_factor": 0.5,
        "max_position_embeddings": 32,
        "original_max_position_embeddings": 8,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0, 1.1, 1.3, 1.7],
            "long_factor": [1.5, 2.5, 4.0, 6.0],
        },
    },
    "gemma": {**COMMON, "head_dim": 24},
    "gemma2": {
        **COMMON,
        "head_dim": 24,
        "sliding_window": 4,
        "attn_logit_softcapping": 5.0,
        "final_logit_softcapping": 3.0,
        "query_pre_attn_scalar": 20,
    },
    "gemma3_text": {
        **COMMON,
        "num_hidden_layers": 3,
        "head_dim": 24,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
        "rope_theta": 1_000_000.0,
        "rope_local_base_freq": 10_000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
        "query_pre_attn_scalar": 24,
    },
    "granite": {
        **COMMON,
        "embedding_multiplier": 3.0,
        "residual_multiplier": 0.5,
        "attention_multiplier": 0.1,
        "logits_scaling": 4.0,
    },
    "olmo2": {**COMMON},
    "gpt2": {
        "vocab_size": 128,
        "n_embd": 64,
        "n_head": 4,
        "n_layer": 2,
        "n_positions": 64,
        "initializer_range": 0.1,
        "bos_token_id": 1,
        "eos_token_id": 2,
    },
    "phi": {
        **COMMON,
        "num_key_value_heads": 4,
        "partial_rotary_factor": 0.5,
        "qk_layernorm": True,
    },
    # sliding windows at head size 16, which onnxruntime's cpu GroupQueryAttention runs with
    # rotary inside: the prompt (7) and the decode steps outgrow the window (4)
    "mistral-window16": {**COMMON, "sliding_window": 4},
    "qwen2-window16": {
        **COMMON,
        "use_sliding_window": True,
        "sliding_window": 4,
        "max_window_layers": 0,  # every layer slides
    },
    "qwen3-window16": {
        **COMMON,
        "use_sliding_window": True,
        "sliding_window": 4,
        "max_window_layers": 1,  # layer 0 full, layer 1 sliding
    },
    "phi3-window16": {**COMMON, "num_key_value_heads": 4, "sliding_window": 4},
    "gemma2-window16": {
        **COMMON,
        "head_dim": 16,
        "sliding_window": 4,
        "attn_logit_softcapping": 5.0,
        "final_logit_softcapping": 3.0,
        "query_pre_attn_scalar": 20,
    },
    "gemma3_text-window16": {
        **COMMON,
        "num_hidden_layers": 3,
        "head_dim": 16,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        "query_pre_attn_scalar": 16,
    },
    # rope scalings not covered by a family above
    "llama-linear": {**COMMON, "rope_scaling": {"rope_type": "linear", "factor": 3.0}},
    "llama-dynamic": {
        **COMMON,
        "max_position_embeddings": 6,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
    },
    "llama-yarn": {
        **COMMON,
        "max_position_embeddings": 32,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 8,
        },
    },
}

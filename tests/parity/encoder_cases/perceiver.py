from tests.parity.encoder_cases import EncoderCase

# 12 latents read the 9 bytes (the second row padded after 5), their queries / keys as wide
# as the bytes (cross_attention_shape_for_attention "kv"); two passes of two shared
# self-attention layers; 16 decoder positions, more than the input's 9
TINY = {
    "model_type": "perceiver",
    "vocab_size": 40,
    "max_position_embeddings": 16,
    "d_model": 32,
    "d_latents": 48,
    "num_latents": 12,
    "num_blocks": 2,
    "num_self_attends_per_block": 2,
    "num_self_attention_heads": 4,
    "num_cross_attention_heads": 2,
    "self_attention_widening_factor": 2,
    "cross_attention_widening_factor": 3,
    "hidden_act": "gelu",
    "num_labels": 3,
}

CASES = {
    "perceiver": EncoderCase(TINY, ("PerceiverForMaskedLM", "PerceiverForSequenceClassification")),
    # deepmind/language-perceiver's layout: queries / keys narrower than the values everywhere
    "perceiver:qk_channels": EncoderCase(
        {**TINY, "qk_channels": 16, "v_channels": 48}, ("PerceiverForMaskedLM",)
    ),
    # the cross-attention's queries / keys as wide as the latents
    "perceiver:q_shape": EncoderCase(
        {**TINY, "cross_attention_shape_for_attention": "q", "use_query_residual": False},
        ("PerceiverForSequenceClassification",),
    ),
}

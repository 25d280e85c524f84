from tests.parity.encoder_cases import EncoderCase

# 12 latents read the 9 bytes (the second row padded after 5); two passes of two shared
# self-attention layers; queries / keys narrower than values in the cross-attention; 16
# decoder positions, more than the input's 9
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
    "cross_attention_shape_for_attention": "q",
    "v_channels": 48,
    "self_attention_widening_factor": 2,
    "cross_attention_widening_factor": 3,
    "hidden_act": "gelu",
    "num_labels": 3,
}

CASES = {
    "perceiver": EncoderCase(TINY, ("PerceiverForMaskedLM", "PerceiverForSequenceClassification")),
}

from tests.parity.seq2seq_cases import Seq2SeqCase

# T5's keys at the sizes the other encoder-decoder cases use; 8 buckets reaching 5 tokens, so
# the short parity sequences cross into the logarithmic and the saturated buckets
T5_SIZES = {
    "vocab_size": 128,
    "d_model": 64,
    "d_kv": 16,
    "d_ff": 96,
    "num_layers": 2,
    "num_heads": 4,
    "relative_attention_num_buckets": 8,
    "relative_attention_max_distance": 5,
    "pad_token_id": 0,
    "eos_token_id": 1,
    "decoder_start_token_id": 0,
}

CASES = {
    "t5": Seq2SeqCase({"model_type": "t5", **T5_SIZES}),
    # T5 v1.1 / FLAN-T5: gated-GELU, an own lm_head, no logit scale; 3 decoder layers
    "t5:v1.1": Seq2SeqCase(
        {
            "model_type": "t5",
            **T5_SIZES,
            "feed_forward_proj": "gated-gelu",
            "tie_word_embeddings": False,
            "num_decoder_layers": 3,
        }
    ),
    "mt5": Seq2SeqCase({"model_type": "mt5", **T5_SIZES, "d_kv": 8}),
    "umt5": Seq2SeqCase({"model_type": "umt5", **T5_SIZES, "feed_forward_proj": "gated-silu"}),
}

# LongT5: a radius of 2 (blocks of 3) bands the 9 source tokens; transient-global blocks of 2
# give 4 global keys, the padded row's last real token folded into the block before it
CASES |= {
    "longt5:local": Seq2SeqCase({"model_type": "longt5", **T5_SIZES, "local_radius": 2}),
    "longt5": Seq2SeqCase(
        {
            "model_type": "longt5",
            **T5_SIZES,
            "encoder_attention_type": "transient-global",
            "local_radius": 2,
            "global_block_size": 2,
            "feed_forward_proj": "gated-gelu",
        }
    ),
}

# Switch Transformers: layer 1 of each stack is a 4-expert MoE; the checkpoints' capacity of 64
# keeps every token (tests/test_switch_transformers.py drops some)
SWITCH = {
    **T5_SIZES,
    "model_type": "switch_transformers",
    "num_experts": 4,
    "expert_capacity": 64,
    "num_sparse_encoder_layers": 1,
    "num_sparse_decoder_layers": 1,
}
CASES |= {"switch_transformers": Seq2SeqCase(SWITCH)}

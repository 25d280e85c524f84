from tests.parity.encoder_cases import EncoderCase

# three blocks, so the 9 tokens pool to 5 then 3 (the padded row's mask pooled with them), the
# last block's layer repeated; a decoder layer brings the full-length heads back to 9
TINY = {
    "model_type": "funnel",
    "vocab_size": 128,
    "block_sizes": [1, 1, 1],
    "block_repeats": [1, 1, 2],
    "num_decoder_layers": 1,
    "d_model": 32,
    "n_head": 2,
    "d_head": 16,
    "d_inner": 64,
    "initializer_range": 0.1,
    "pad_token_id": 1,
}
BODIES = ("FunnelModel", "FunnelBaseModel")

CASES = {
    "funnel": EncoderCase(
        TINY,
        (
            *BODIES,
            "FunnelForMaskedLM",
            "FunnelForSequenceClassification",
            "FunnelForTokenClassification",
            "FunnelForQuestionAnswering",
        ),
    ),
    # sin and cos of both positions in place of the distance table; pairs pooled by maximum
    "funnel:factorized": EncoderCase(
        {**TINY, "attention_type": "factorized", "pooling_type": "max"},
        (*BODIES, "FunnelForSequenceClassification"),
    ),
    # CLS pooled with the rest; keys and values pooled with the queries
    "funnel:pool_all": EncoderCase({**TINY, "separate_cls": False, "pool_q_only": False}, BODIES),
}

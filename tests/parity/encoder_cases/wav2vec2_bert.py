from tests.parity.encoder_cases import EncoderCase

# 64 frames of 20 stacked features (the padded row keeps 45): distances clamped at 6 to the
# left and 3 to the right, well inside the frames; a causal depthwise kernel wider than the
# clamp; swish as released checkpoints use
W2V_BERT = {
    "model_type": "wav2vec2-bert",
    "vocab_size": 24,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "feature_projection_input_dim": 20,
    "hidden_act": "swish",
    "conv_depthwise_kernel_size": 7,
    "left_max_position_embeddings": 6,
    "right_max_position_embeddings": 3,
    "classifier_proj_size": 24,
    "num_labels": 3,
    "initializer_range": 0.1,
}
HEADS = ("ForCTC", "ForSequenceClassification", "Model")

CASES = {
    "wav2vec2-bert": EncoderCase(W2V_BERT, tuple(f"Wav2Vec2Bert{h}" for h in HEADS), inputs="mel"),
    "wav2vec2-bert:weighted": EncoderCase(
        {**W2V_BERT, "use_weighted_layer_sum": True},
        ("Wav2Vec2BertForSequenceClassification",),
        inputs="mel",
    ),
    # CTC fine-tunes' adapter: two layers each halving the frames (64 make 16, the padded
    # row's 45 make 12), projected to a narrower width, after the intermediate feed-forward
    "wav2vec2-bert:adapter": EncoderCase(
        {
            **W2V_BERT,
            "add_adapter": True,
            "num_adapter_layers": 2,
            "output_hidden_size": 32,
            "use_intermediate_ffn_before_adapter": True,
        },
        ("Wav2Vec2BertForCTC", "Wav2Vec2BertModel"),
        inputs="mel",
    ),
    # the adapter at the encoder's width: its first norms read the intermediate sum
    "wav2vec2-bert:adapter-unprojected": EncoderCase(
        {**W2V_BERT, "add_adapter": True, "use_intermediate_ffn_before_adapter": True},
        ("Wav2Vec2BertForCTC",),
        inputs="mel",
    ),
    # the position types wav2vec2-Conformer shares, and none
    **{
        f"wav2vec2-bert:{positions}": EncoderCase(
            {**W2V_BERT, "position_embeddings_type": positions},
            ("Wav2Vec2BertModel",),
            inputs="mel",
        )
        for positions in ("relative", "rotary")
    },
    "wav2vec2-bert:no-positions": EncoderCase(
        {**W2V_BERT, "position_embeddings_type": None}, ("Wav2Vec2BertModel",), inputs="mel"
    ),
}

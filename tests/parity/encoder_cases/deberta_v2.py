from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

HEADS = tuple(f"DebertaV2{h}" for h in TEXT_HEADS)
# DeBERTa-v3's layout: no absolute positions, log-bucketed distances, keys shared with the
# content projections, a LayerNormed relative table
V3 = {
    **TEXT,
    "model_type": "deberta-v2",
    "type_vocab_size": 0,
    "relative_attention": True,
    "position_biased_input": False,
    "pos_att_type": ["p2c", "c2p"],
    "max_relative_positions": -1,
    "position_buckets": 8,
    "norm_rel_ebd": "layer_norm",
    "share_att_key": True,
}

CASES = {
    "deberta-v2": EncoderCase(V3, HEADS),
    # DeBERTa-v2-xlarge's layout: own position projections, no buckets, absolute positions,
    # a convolution beside the first layer; token types; the non-legacy masked-LM head
    "deberta-v2:v2": EncoderCase(
        {
            **V3,
            "type_vocab_size": 2,
            "position_biased_input": True,
            "position_buckets": -1,
            "max_relative_positions": 6,
            "share_att_key": False,
            "norm_rel_ebd": "none",
            "pos_att_type": "c2p|p2c",
            "conv_kernel_size": 3,
            "conv_act": "gelu",
            "legacy": False,
        },
        ("DebertaV2ForMaskedLM", "DebertaV2ForSequenceClassification"),
    ),
    # c2p alone, a narrower embedding table projected up, an untied legacy decoder
    "deberta-v2:c2p": EncoderCase(
        {
            **V3,
            "pos_att_type": ["c2p"],
            "embedding_size": 32,
            "position_buckets": 4,
            "tie_word_embeddings": False,
        },
        ("DebertaV2ForMaskedLM", "DebertaV2Model"),
    ),
}

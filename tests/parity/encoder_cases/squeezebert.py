from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# squeezebert-uncased's grouping: four blocks everywhere but the post-attention projection
TINY = {
    **TEXT,
    "model_type": "squeezebert",
    "embedding_size": 64,
    "q_groups": 4,
    "k_groups": 4,
    "v_groups": 4,
    "post_attention_groups": 1,
    "intermediate_groups": 4,
    "output_groups": 4,
    "layer_norm_eps": 1e-3,  # read by the embeddings and the LM head, not the layers
}

CASES = {
    "squeezebert": EncoderCase(TINY, tuple(f"SqueezeBert{h}" for h in TEXT_HEADS)),
    "squeezebert:untied": EncoderCase(
        {**TINY, "tie_word_embeddings": False, "q_groups": 2, "post_attention_groups": 2},
        ("SqueezeBertForMaskedLM",),
    ),
}

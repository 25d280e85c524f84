"""Parity cases of converter/models/minicpm3.py: multi-head latent attention, scaled
embeddings, residuals and logits."""

from tests.parity.common import COMMON

MLA = {
    "q_lora_rank": 24,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 12,
}
SCALES = {"scale_emb": 3.0, "scale_depth": 1.4, "dim_model_base": 16}
# one latent feeds every head: as many key/value heads as query heads
BASE = {**COMMON, "num_key_value_heads": COMMON["num_attention_heads"], **MLA, **SCALES}

CASES = {
    "minicpm3": {**BASE, "attention_bias": True},
    # q_proj instead of the low-rank q_a_proj -> norm -> q_b_proj; untied head
    "minicpm3:noqlora": {
        **BASE,
        "q_lora_rank": None,
        "tie_word_embeddings": False,
    },
    # LongRoPE (as MiniCPM3-4B): past original_max_position_embeddings the long factors rotate
    "minicpm3:longrope": {
        **BASE,
        "max_position_embeddings": 32,
        "rope_parameters": {
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "short_factor": [1.0, 1.1, 1.3, 1.7],
            "long_factor": [1.5, 2.5, 4.0, 6.0],
            "original_max_position_embeddings": 8,
        },
    },
}

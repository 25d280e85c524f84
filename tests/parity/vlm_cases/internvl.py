"""InternVL: a tiny InternViT (32-pixel tiles of 4-pixel patches: an 8 x 8 grid and a class
token) pixel-shuffled into a tiny Qwen2."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 320,
    "max_position_embeddings": 256,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "image_size": 32,
    "patch_size": 4,
}
BASE = {"model_type": "internvl", "text_config": TEXT, "image_token_id": 300}

CASES = {
    # 2 x 2 blocks (16 tokens a tile) of the tower's output (mean pooling: no final norm);
    # the head tied by the top-level tie_word_embeddings though Qwen2's says untied
    "internvl": VlmCase({**BASE, "vision_config": VISION}),
    # RMSNorm layers, q/k norms, biased q/k/v, the final layernorm on the output (-1)
    "internvl:rms": VlmCase(
        {
            **BASE,
            "vision_config": {
                **VISION,
                "norm_type": "rms_norm",
                "use_qk_norm": True,
                "attention_bias": True,
                "use_mean_pooling": False,
            },
            "projector_hidden_act": "silu",
        }
    ),
    # 4 x 4 blocks (4 tokens a tile) of the first layer's states (the rest of the tower and its
    # final layernorm unused), no absolute positions, a mask token no graph reads, its own head
    "internvl:layer": VlmCase(
        {
            **BASE,
            "vision_config": {
                **VISION,
                "use_mean_pooling": False,
                "use_absolute_position_embeddings": False,
                "use_mask_token": True,
            },
            "vision_feature_layer": 1,
            "downsample_ratio": 0.25,
            "tie_word_embeddings": False,
        }
    ),
}

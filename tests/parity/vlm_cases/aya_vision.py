"""Aya Vision: a tiny SigLIP tower (32-pixel tiles of 4-pixel patches: an 8 x 8 grid) pixel-
shuffled into a tiny Cohere 2 (three sliding layers, window 4, outgrown by the prompt, then one
without positions)."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "cohere2",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 320,
    "max_position_embeddings": 256,
    "sliding_window": 4,
    "logit_scale": 0.5,
    "bos_token_id": 5,
    "eos_token_id": 6,
    "pad_token_id": 0,
}
VISION = {
    "model_type": "siglip_vision_model",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "image_size": 32,
    "patch_size": 4,
}
BASE = {"model_type": "aya_vision", "text_config": TEXT, "vision_config": VISION}

CASES = {
    # 2 x 2 blocks (16 tokens a tile), the last layer, the projector as wide as the text model
    "aya_vision": VlmCase({**BASE, "image_token_index": 300}),
    # 4 x 4 blocks (4 tokens a tile) of the middle layer (the last one unused), a narrower
    # projector, and a head of its own (the top-level tie_word_embeddings decides, not the text's)
    "aya_vision:layer": VlmCase(
        {
            **BASE,
            "image_token_index": 300,
            "vision_feature_layer": -2,
            "downsample_factor": 4,
            "alignment_intermediate_size": 48,
            "tie_word_embeddings": False,
        }
    ),
}

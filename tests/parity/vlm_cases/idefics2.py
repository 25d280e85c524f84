"""Idefics 2: a tiny tower (a 32-pixel position grid of 4-pixel patches: 8 x 8 buckets) over
Idefics 2's processor output with image splitting (each image four crops and itself, padded to
the batch's largest, neither a whole number of patches), a SwiGLU projection and a two-layer
perceiver resampler (4 latents, 4 query heads sharing 2 key/value heads) into the tiny Mistral
of the Mistral 3 case."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.mistral3 import TEXT

VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 32,
    "patch_size": 4,
}
PERCEIVER = {
    "hidden_size": TEXT["hidden_size"],
    "rms_norm_eps": 1e-5,
    "resampler_n_latents": 4,
    "resampler_depth": 2,
    "resampler_n_heads": 4,
    "resampler_head_dim": 16,
    "num_key_value_heads": 2,
}
CASES = {
    "idefics2": VlmCase(
        {
            "model_type": "idefics2",
            "text_config": TEXT,
            "vision_config": VISION,
            "perceiver_config": PERCEIVER,
            "image_token_id": 300,
        },
        inputs="padded_images",
    ),
}

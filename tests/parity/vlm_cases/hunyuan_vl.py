"""HunYuanVL: a tiny tower (4-pixel patches, a 4 x 4 learned position grid resampled to two
image grids of other sizes, merge blocks of 2x2 framed by newlines, begin and end) into a tiny
HunYuan dense with q/k norms after XD-RoPE over 4 position rows whose sections, doubled, give a
head's two halves different rows; its NTK alpha stretches the rope's base."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "hunyuan_vl_text",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 400,
    "max_position_embeddings": 512,
    "rope_parameters": {
        "rope_type": "dynamic",
        "alpha": 10.0,
        "factor": 1.0,
        "rope_theta": 1e4,
        "mrope_section": [1, 3, 2, 2],
    },
}
VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "patch_size": 4,
    "spatial_merge_size": 2,
    "max_image_size": 16,
}
CASES = {
    "hunyuan_vl": VlmCase(
        {
            "model_type": "hunyuan_vl",
            "text_config": TEXT,
            "vision_config": VISION,
            "image_token_id": 390,
            "im_start_id": 392,
            "im_end_id": 393,
            "im_newline_id": 394,
        },
        inputs="patches",
    ),
}

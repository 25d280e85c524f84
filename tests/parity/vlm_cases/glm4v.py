"""GLM-4V: a tiny tower (4-pixel patches, a 4 x 4 learned position grid resampled to two image
grids of other sizes, merge blocks of 2x2) into a tiny GLM-4 with interleaved partial rotary
(half of each head) whose mrope sections sum to its rotary half; GLM-OCR's variant of both; the
MoE text model under GLM-4.5V and GLM-4.6V."""

from tests.parity.vlm_cases import VlmCase

TEXT = {
    "model_type": "glm4v_text",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 400,
    "max_position_embeddings": 512,
    "rope_parameters": {
        "rope_type": "default",
        "mrope_section": [1, 1, 2],
        "partial_rotary_factor": 0.5,
        "rope_theta": 1e4,
    },
}
MOE_TEXT = {
    **TEXT,
    "model_type": "glm4v_moe_text",
    "moe_intermediate_size": 32,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "n_group": 1,
    "topk_group": 1,
}
VISION = {
    "depth": 2,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_heads": 2,
    "out_hidden_size": 64,
    "image_size": 16,
    "patch_size": 4,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
}
TOKENS = {
    "image_token_id": 390,
    "video_token_id": 391,
    "image_start_token_id": 392,
    "image_end_token_id": 393,
}


def _case(model_type: str, text: dict, vision: dict) -> VlmCase:
    return VlmCase(
        {"model_type": model_type, "text_config": text, "vision_config": vision, **TOKENS},
        inputs="patches",
    )


CASES = {
    "glm4v": _case("glm4v", TEXT, VISION),
    "glm4v_moe": _case("glm4v_moe", {**MOE_TEXT, "attention_bias": True}, VISION),
    "glm46v": _case("glm46v", MOE_TEXT, VISION),
    "glmga": _case("glmga", TEXT, VISION),
    "glm_ocr": _case(
        "glm_ocr",
        {
            **TEXT,
            "model_type": "glm_ocr_text",
            "head_dim": 32,  # not hidden / heads
            "rope_parameters": {**TEXT["rope_parameters"], "mrope_section": [2, 3, 3]},
        },
        {**VISION, "attention_bias": True},
    ),
}

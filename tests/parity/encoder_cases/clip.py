from tests.parity.encoder_cases import EncoderCase

# the tower sizes the two-tower cases share (image 32 in patches of 8: 16 patches)
TEXT_TOWER = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 32,
    "pad_token_id": 1,
}
VISION_TOWER = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "image_size": 32,
    "patch_size": 8,
}


def two_towers(model_type: str, text: dict, vision: dict, **top) -> dict:
    return {"model_type": model_type, "text_config": text, "vision_config": vision, **top}


CASES = {
    # pooled at the first EOS token (not the highest id)
    "clip": EncoderCase(
        two_towers("clip", {**TEXT_TOWER, "eos_token_id": 60}, VISION_TOWER, projection_dim=48),
        ("CLIPModel", "CLIPForImageClassification"),
        inputs="text+image",
    ),
    # configs from before transformers PR #24773 (eos_token_id 2): pooled at the highest id
    "clip:legacy_eos": EncoderCase(
        two_towers(
            "clip",
            {**TEXT_TOWER, "eos_token_id": 2, "hidden_act": "gelu"},
            {**VISION_TOWER, "num_channels": 1},
            projection_dim=48,
        ),
        ("CLIPModel",),
        inputs="text+image",
    ),
    # always pooled at the EOS token, even where it is 2
    "metaclip_2": EncoderCase(
        two_towers(
            "metaclip_2", {**TEXT_TOWER, "eos_token_id": 2}, VISION_TOWER, projection_dim=32
        ),
        ("MetaClip2Model", "MetaClip2ForImageClassification"),
        inputs="text+image",
    ),
}

from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.clip import TEXT_TOWER, VISION_TOWER, two_towers

BERT_TOWER = {**TEXT_TOWER, "max_position_embeddings": 64}

CASES = {
    "chinese_clip": EncoderCase(
        two_towers("chinese_clip", BERT_TOWER, VISION_TOWER, projection_dim=48),
        ("ChineseCLIPModel",),
        inputs="text+image",
    ),
    # positions counted from padding_idx + 1, as RoBERTa's
    "altclip": EncoderCase(
        two_towers("altclip", {**BERT_TOWER, "project_dim": 40}, VISION_TOWER, projection_dim=48),
        ("AltCLIPModel",),
        inputs="text+image",
    ),
}

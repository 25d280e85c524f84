"""GOT-OCR 2.0 and PP-Chart2Table: a tiny SAM tower into a tiny Qwen2 whose head is tied.
GOT-OCR 2.0's: 80-pixel images of 8-pixel patches (a 10 x 10 grid), windows of 4 (the grid
padded to 12), layer 1 global; the two stride-2 Convs leave 3 x 3 = 9 image tokens.
PP-Chart2Table's: windows of 5 tiling the grid exactly, layers 0 and 2 global, no absolute
positions."""

from tests.parity.vlm_cases import VlmCase
from tests.parity.vlm_cases.llava import TEXT

VISION = {
    "hidden_size": 32,
    "mlp_dim": 64,
    "output_channels": 16,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "image_size": 80,
    "patch_size": 8,
    "window_size": 4,
    "global_attn_indexes": [1],
}
QWEN2 = {**TEXT, "model_type": "qwen2"}

CASES = {
    "got_ocr2": VlmCase(
        {
            "model_type": "got_ocr2",
            "text_config": QWEN2,
            "vision_config": VISION,
            "image_token_index": 300,
        }
    ),
    "pp_chart2table": VlmCase(
        {
            "model_type": "pp_chart2table",
            "text_config": QWEN2,
            "vision_config": {
                **VISION,
                "num_hidden_layers": 4,
                "window_size": 5,
                "global_attn_indexes": [0, 2],
                "use_abs_pos": False,
            },
            "image_token_index": 300,
        }
    ),
}

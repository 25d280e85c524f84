"""GOT-OCR 2.0 (transformers' got_ocr2) and PP-Chart2Table, its layout under another type: SAM's
image encoder (converter/models/sam_vision.py) down to the neck's map, two 3x3 stride-2 Convs
(`conv_upsampler1`, `conv_upsampler2`, no biases) to the text width, the map's positions
row by row through `multimodal_projector`, in place of the image tokens of Qwen2. The vision
graph takes fixed-size images: pixel_values [num_images, 3, image_size, image_size], each
(ceil(grid / 4))^2 tokens."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.conv2d import Conv2d
from converter.config.reader import ConfigReader
from converter.config.vision_language import VisionLanguageRules
from converter.models.llava import LLAVA_RENAMES
from converter.models.sam_vision import SamVisionConfig, SamVisionEncoder, read_sam_vision
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class GotOcr2Rules(VisionLanguageRules):
    text_type = "qwen2"
    vision_type = "got_ocr2_vision"
    tie_from_text = False

    def read_vision(self, r: ConfigReader) -> SamVisionConfig:
        return read_sam_vision(r)


class PPChart2TableRules(GotOcr2Rules):
    vision_type = "pp_chart2table_vision"


class GotOcr2Projector(nn.Module):
    """[images, channels, grid, grid] -> [images, tokens, text hidden]."""

    def __init__(self, channels: int, hidden: int, dtype: ir.DataType):
        super().__init__()
        self.conv_upsampler1 = Conv2d(channels, 2 * channels, 3, dtype, 2, 1, bias=False)
        self.conv_upsampler2 = Conv2d(2 * channels, hidden, 3, dtype, 2, 1, bias=False)
        self.multimodal_projector = Linear(hidden, hidden, True, dtype)

    def forward(self, op, x):
        x = self.conv_upsampler2(op, self.conv_upsampler1(op, x))
        x = op.Transpose(op.Reshape(x, [0, 0, -1]), perm=[0, 2, 1])
        return self.multimodal_projector(op, x)


class GotOcr2Model(VisionLanguageModel):
    def make_vision(self, cfg, dtype: ir.DataType, ep) -> None:
        self.vision_tower = SamVisionEncoder(cfg.vision, dtype, ep)
        channels, hidden = cfg.vision.output_channels, cfg.text.hidden_size
        self.multi_modal_projector = GotOcr2Projector(channels, hidden, dtype)

    def image_features(self, op, image) -> ir.Value:
        features = self.multi_modal_projector(op, self.vision_tower(op, image.pixel_values))
        return op.Reshape(features, [-1, self.cfg.text.hidden_size])


NOTES = (
    "SAM's windowed ViT (decomposed relative positions, global layers, a convolutional neck) "
    "through two stride-2 Convs and a linear projector in place of the image tokens of Qwen2 "
    "(vision.onnx, embedding.onnx, model.onnx; onnxruntime runs it)"
)

FAMILIES = [
    Family(
        model_type,
        GotOcr2Model,
        f"{name}: {NOTES}",
        (example,),
        rules=rules,
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_RENAMES,
    )
    for model_type, name, example, rules in (
        ("got_ocr2", "GOT-OCR 2.0", "stepfun-ai/GOT-OCR-2.0-hf", GotOcr2Rules()),
        (
            "pp_chart2table",
            "PP-Chart2Table, GOT-OCR 2.0's layout",
            "PaddlePaddle/PP-Chart2Table_safetensors",
            PPChart2TableRules(),
        ),
    )
]

"""Video-LLaVA's image path: its image tower (CLIP) and LLaVA's projector into Llama, as LLaVA
converts them (the image tower bound as LLaVA's vision_tower). Video is not converted: the
video tower (a second CLIP run over every frame, class tokens kept) feeds the rows of its own
token, which the three graphs of the image-text-to-text task do not carry; its weights are
left unread, and a prompt of the converted model holds images only."""

from __future__ import annotations

from converter.models.llava import LLAVA_RENAMES, LlavaModel, LlavaRules
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class VideoLlavaRules(LlavaRules):
    tie_from_text = False


class VideoLlavaModel(LlavaModel):
    def unused_tensors(self) -> tuple[str, ...]:
        return (*super().unused_tensors(), r"video_tower\..+")


# LLaVA's layouts (converter/models/llava.py) with two towers: `image_tower.` and
# `video_tower.`, under `model.` in transformers 5's module names, their CLIP under
# `vision_model.` in transformers 4's
VIDEO_LLAVA_RENAMES = (
    (r"^(model\.)?(image|video)_tower\.(vision_model\.)?", r"\2_tower."),
    (r"^image_tower\.", "vision_tower."),
    *LLAVA_RENAMES,
)

FAMILIES = [
    Family(
        "video_llava",
        VideoLlavaModel,
        "Video-LLaVA's image path: its image tower's chosen hidden states through LLaVA's "
        "projector into Llama (vision.onnx, embedding.onnx, model.onnx; onnxruntime runs it); "
        "video inputs are not converted (the video tower is left unread)",
        ("LanguageBind/Video-LLaVA-7B-hf",),
        rules=VideoLlavaRules(),
        task=VLM_TASK,
        category="vlm",
        renames=VIDEO_LLAVA_RENAMES,
    ),
]

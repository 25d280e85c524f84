"""Video-LLaVA's image path: its image tower (CLIP) and LLaVA's projector into Llama, as LLaVA
converts them (the image tower bound as LLaVA's vision_tower). Video is not converted: the
video tower (a second CLIP run over every frame, class tokens kept) feeds the rows of its own
token, which the three graphs of the image-text-to-text task do not carry; its weights are
left unread, and a prompt of the converted model holds images only."""

from __future__ import annotations

from converter.models.llava import LlavaModel, LlavaRules
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class VideoLlavaRules(LlavaRules):
    tie_from_text = False


class VideoLlavaModel(LlavaModel):
    def unused_tensors(self) -> tuple[str, ...]:
        return (*super().unused_tensors(), r"video_tower\..+")


# as LLaVA's (converter/models/llava.py), with two towers: transformers 4 and 5's
# save_pretrained keep `image_tower.` and `video_tower.` (under `vision_model.` in 4), its
# module names put them under `model.`
VIDEO_LLAVA_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^lm_head\.", "language_model.lm_head."),
    (r"^model\.(image|video)_tower\.", r"\1_tower."),
    (r"^model\.multi_modal_projector\.", "multi_modal_projector."),
    (r"^(image|video)_tower\.vision_model\.", r"\1_tower."),
    (r"^image_tower\.", "vision_tower."),
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

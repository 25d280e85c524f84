"""EXAONE 4.5: Qwen2.5-VL's vision tower (converter/models/qwen2_5_vl.py) with grouped keys and
values in its attention (vision_config's num_key_value_heads), into EXAONE 4.

Unlike Qwen-VL, the decoder reads plain 1-D positions (0, 1, ... over image tokens too):
transformers' EXAONE 4.5 has no 3-D rope.
"""

from __future__ import annotations

import dataclasses

from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.models.qwen2_5_vl import Qwen25VlModel, Qwen25VlRules
from converter.models.qwen_vl import QWEN_VL_RENAMES, QwenVisionConfig
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class Exaone45Rules(Qwen25VlRules):
    text_type = "exaone4"
    text_family = None
    vision_type = "exaone4_5_vision"
    tie_from_text = False

    def read_vision(self, r: ConfigReader) -> QwenVisionConfig:
        cfg = super().read_vision(r)
        kv_heads = r.int("num_key_value_heads", hi=cfg.num_heads)
        if cfg.num_heads % kv_heads:
            raise ConfigError(
                f"'num_heads' = {cfg.num_heads} is not a multiple of "
                f"'num_key_value_heads' = {kv_heads}"
            )
        return dataclasses.replace(cfg, num_key_value_heads=kv_heads)

    def read_extra(self, r: ConfigReader, text, vision: QwenVisionConfig) -> dict:
        if vision.out_hidden_size != text.hidden_size:
            raise ConfigError(
                f"vision_config: the merger's output width {vision.out_hidden_size} differs "
                f"from the text model's 'hidden_size' = {text.hidden_size}"
            )
        return {}


class Exaone45Model(Qwen25VlModel):
    mrope = False
    image_prompt = None

    def unused_tensors(self) -> tuple[str, ...]:
        # the multi-token-prediction head transformers also skips
        return (*super().unused_tensors(), r"mtp\..*")


FAMILIES = [
    Family(
        "exaone4_5",
        Exaone45Model,
        "Qwen2.5-VL's vision tower with grouped-query attention, into EXAONE 4 with 1-D positions",
        ("LGAI-EXAONE/EXAONE-4.5-33B",),
        rules=Exaone45Rules(),
        task=VLM_TASK,
        category="vlm",
        renames=QWEN_VL_RENAMES,
    ),
]

"""ShieldGemma 2 as its checkpoints are saved: ShieldGemma2ForImageClassification (Gemma 3's
model one `model.` deeper) converts as Gemma 3's image-text-to-text graphs, whose logits at the
prompt's last position, read at the yes and no tokens, are the classifier's."""

from __future__ import annotations

import numpy as np
import torch

from converter import build
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES, VlmCase
from tests.parity.vlm_reference import make_vlm

YES, NO = 10, 11


def test_the_classifier_checkpoint_converts(tmp_path):
    config = {**CASES["shieldgemma2"].config, "yes_token_index": YES, "no_token_index": NO}
    case = VlmCase(config, model_class="ShieldGemma2ForImageClassification")
    model = make_vlm("shieldgemma2-classifier", case, tmp_path / "hf")
    assert any(k.startswith("model.model.") for k in model.state_dict())  # the nested layout
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "onnx", progress=False)

    rng = np.random.default_rng(0)
    vision = model.config.vision_config
    pixels = rng.standard_normal((1, 3, vision.image_size, vision.image_size)).astype(np.float32)
    tokens = model.config.mm_tokens_per_image
    ids = np.array([[5, 6, *[model.config.image_token_id] * tokens, 7, 8]])
    logits = OnnxVisionLanguage(tmp_path / "onnx").run({"pixel_values": pixels}, ids, [])[0]
    with torch.no_grad():
        expected = model(
            input_ids=torch.from_numpy(ids),
            pixel_values=torch.from_numpy(pixels),
            token_type_ids=torch.from_numpy((ids == model.config.image_token_id).astype(np.int64)),
        ).logits.numpy()
    assert np.abs(logits[:, -1, [YES, NO]] - expected).max() < 1e-4

"""Every vision-language family against transformers on the same random weights (f32), on the
portable `default` graph and the `cpu` graph with onnxruntime's fused kernels, component by
component: the vision graph's image features, the embedding graph's merge of them into the
prompt, and the decoder's logits over the prompt and then one cached step at a time."""

from __future__ import annotations

import numpy as np
import pytest

from converter import build
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm, pixel_images, prompt, reference, step_tokens

TOLERANCE = 1e-4


@pytest.fixture(scope="module", params=sorted(CASES))
def converted(request, tmp_path_factory):
    case_id = request.param
    folder = tmp_path_factory.mktemp(case_id.replace(":", "-"))
    model = make_vlm(case_id, CASES[case_id], folder / "hf")
    for ep in ("default", "cpu"):
        build(str(folder / "hf"), ep=ep, progress=False).save(folder / ep, progress=False)
    return model, folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_components_match_transformers(converted, ep):
    model, folder = converted
    runtime = OnnxVisionLanguage(folder / ep)
    image = pixel_images(model)
    features = runtime.image_features(image)
    ids = prompt(model, features.shape[0] // 2)
    steps = step_tokens(model)
    want_features, want_embeds, want_logits = reference(model, image, ids, steps)
    assert features.shape == want_features.shape
    diffs = {"image_features": float(np.abs(features - want_features).max())}
    embeds = runtime.embed(ids, features)
    diffs["inputs_embeds"] = float(np.abs(embeds - want_embeds).max())
    for i, (got, want) in enumerate(zip(runtime.run(image, ids, steps), want_logits, strict=True)):
        assert got.shape == want.shape, i
        diffs[f"logits {i}"] = float(np.abs(got - want).max())
    print(ep, diffs)
    assert max(diffs.values()) <= TOLERANCE, diffs

"""Every vision-language family against transformers on the same random weights (f32), on the
portable `default` graph and the `cpu` graph with onnxruntime's fused kernels, component by
component: the vision graph's image features, the embedding graph's merge of them into the
prompt, and the decoder's logits over the prompt and then one cached step at a time (3-D
positions from transformers where the family has them). transformers is given the
token_type_ids the family's processor gives (Gemma 3's image tokens, PaliGemma's prompt), whose
masks the decoders reproduce: nothing differs."""

from __future__ import annotations

import numpy as np
import pytest

from converter import build
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import (
    INPUTS,
    case_rng,
    make_vlm,
    positions,
    reference,
    step_tokens,
)

TOLERANCE = 1e-4


@pytest.fixture(scope="module", params=sorted(CASES))
def converted(request, tmp_path_factory):
    case_id = request.param
    folder = tmp_path_factory.mktemp(case_id.replace(":", "-"))
    model = make_vlm(case_id, CASES[case_id], folder / "hf")
    for ep in ("default", "cpu"):
        build(str(folder / "hf"), ep=ep, progress=False).save(folder / ep, progress=False)
    return case_id, model, folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_components_match_transformers(converted, ep):
    case_id, model, folder = converted
    case = CASES[case_id]
    runtime = OnnxVisionLanguage(folder / ep)
    rng = case_rng(case_id)
    image, ids = INPUTS[case.inputs](model, rng)
    steps = step_tokens(model, ids.shape[0], rng)
    want_features, want_embeds, want_logits = reference(model, image, ids, steps, case.token_types)
    features = runtime.image_features(image)
    assert features.shape == want_features.shape
    diffs = {"image_features": float(np.abs(features - want_features).max())}
    embeds = runtime.embed(ids, features)
    diffs["inputs_embeds"] = float(np.abs(embeds - want_embeds).max())
    expected = positions(model, image, ids)
    if expected is not None:  # the runtime computes 3-D positions as onnxruntime-genai does
        np.testing.assert_array_equal(runtime.positions(image, ids), expected)
    got = runtime.run(image, ids, steps)
    for i, (a, b) in enumerate(zip(got, want_logits, strict=True)):
        assert a.shape == b.shape, i
        diffs[f"logits {i}"] = float(np.abs(a - b).max())
    print(ep, diffs)
    assert max(diffs.values()) <= TOLERANCE, diffs

"""TIPSv2's published checkpoints lack `temperature` (transformers sets it from
`temperature_init_value`): the combined graph divides by the config's value then."""

import numpy as np
import onnxruntime as ort
import torch
from safetensors.torch import load_file, save_file

from converter import build
from tests.parity.encoder_cases.tipsv2 import CASES
from tests.parity.encoder_reference import INPUTS, make_encoder


def test_a_checkpoint_without_temperature_divides_by_the_configured_one(tmp_path):
    case = CASES["tipsv2"]
    reference = make_encoder("tipsv2", case, "Tipsv2Model", tmp_path / "hf")
    weights = tmp_path / "hf" / "model.safetensors"
    tensors = load_file(weights)
    del tensors["temperature"]
    save_file(tensors, weights, metadata={"format": "pt"})
    with torch.no_grad():
        reference.temperature.fill_(case.config["temperature_init_value"])
    build(str(tmp_path / "hf"), ep="default", progress=False).save(tmp_path / "out", progress=False)
    session = ort.InferenceSession(tmp_path / "out" / "onnx" / "model.onnx")
    inputs = INPUTS[case.inputs](case.config)
    feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
    (logits,) = session.run(["logits_per_text"], feeds)
    with torch.no_grad():
        want = reference(**{k: torch.from_numpy(v) for k, v in feeds.items()}).logits_per_text
    assert np.abs(logits - want.numpy()).max() <= 1e-4

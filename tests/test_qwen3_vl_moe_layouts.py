"""Qwen3-VL-MoE's expert stacks convert from both layouts they come in: output-major (what
transformers 5's save_pretrained writes, the parity case's) and input-major (the Hub's
checkpoints, transposed): the two packages compute the same logits, on the portable graph and
on the kernel's interleaved stacks."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from converter import build
from converter.errors import WeightsError
from converter.validate.vlm_runtime import OnnxVisionLanguage
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import case_rng, make_vlm, patch_inputs

STACKS = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen3_vl_moe")
    model = make_vlm("qwen3_vl_moe", CASES["qwen3_vl_moe"], folder / "saved")
    shutil.copytree(folder / "saved", folder / "hub")
    tensors = load_file(folder / "saved" / "model.safetensors")
    stacks = [name for name in tensors if name.endswith(STACKS)]
    assert stacks
    for name in stacks:
        tensors[name] = np.ascontiguousarray(tensors[name].transpose(0, 2, 1))
    save_file(tensors, folder / "hub" / "model.safetensors", metadata={"format": "pt"})
    return model, folder


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_hub_and_saved_layouts_give_the_same_logits(checkpoints, ep):
    model, folder = checkpoints
    image, ids = patch_inputs(model, case_rng("qwen3_vl_moe"))
    logits = []
    for layout in ("saved", "hub"):
        package = folder / f"{layout}-{ep}"
        build(str(folder / layout), ep=ep, progress=False).save(package, progress=False)
        logits.append(OnnxVisionLanguage(package).run(image, ids, [])[0])
    np.testing.assert_array_equal(*logits)


def test_a_stack_of_neither_layout_is_refused(checkpoints, tmp_path):
    _, folder = checkpoints
    shutil.copytree(folder / "saved", tmp_path / "bad")
    tensors = load_file(tmp_path / "bad" / "model.safetensors")
    name = next(n for n in tensors if n.endswith(STACKS[1]))
    tensors[name] = tensors[name][:, :-1]
    save_file(tensors, tmp_path / "bad" / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WeightsError, match=r"down_proj' has shape .* expects .* or "):
        build(str(tmp_path / "bad"), progress=False)

"""How a two-tower config.json reads: its own model_type (not its text tower's), each section
over its own type's defaults, the older `*_config_dict` sections, errors naming the section, and
the task CLIPModel & co. convert for, AltCLIP's two checkpoint layouts and CLIPSeg's Hub one."""

from __future__ import annotations

import shutil

import numpy as np
import onnxruntime as ort
import pytest
import torch
import transformers
from safetensors.numpy import load_file, save_file

from converter import build
from converter.config import ConfigReader, model_type_of
from converter.errors import ConfigError
from converter.registry import family_for
from converter.tasks.choice import task_of
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import INPUTS, case_inputs, make_encoder


def _read(config: dict):
    family = family_for(model_type_of(config))
    return family.rules.read(ConfigReader(family.rules.select(config), family.model_type))


def test_a_two_tower_config_is_its_own_type_and_a_vlm_is_its_text_model():
    clip = {**CASES["clip"].config, "text_config": {"model_type": "clip_text_model"}}
    assert model_type_of(clip) == "clip"
    gemma3 = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}}
    assert model_type_of(gemma3) == "gemma3_text"
    assert model_type_of({"model_type": "llama"}) == "llama"


def test_sections_read_over_their_own_defaults():
    cfg = _read({"model_type": "clip", "text_config": {}, "vision_config": {}})
    assert (cfg.text.vocab_size, cfg.text.eos_token_id, cfg.text.activation) == (
        49408,
        49407,
        "quick_gelu",
    )
    assert (cfg.vision.image_size, cfg.vision.patch_size, cfg.projection_dim) == (224, 32, 512)


def test_an_older_config_dict_replaces_its_section():
    config = {
        "model_type": "clip",
        "text_config": {"eos_token_id": 2, "hidden_size": 64},
        "text_config_dict": {"hidden_size": 128},
        "vision_config": {},
    }
    cfg = _read(config)
    # transformers rebuilds the section from the dict alone: its defaults win over text_config
    assert (cfg.text.hidden_size, cfg.text.eos_token_id) == (128, 49407)


def test_errors_name_the_section():
    config = {"model_type": "clip", "text_config": {}, "vision_config": {"image_size": 30}}
    with pytest.raises(ConfigError, match=r"^vision_config: 'image_size' = 30 is not a multiple"):
        _read(config)
    with pytest.raises(ConfigError, match=r"'text_config' must be a JSON object"):
        _read({"model_type": "clip", "text_config": "clip", "vision_config": {}})


def test_the_two_tower_classes_are_zero_shot_image_classification():
    clip = family_for("clip")
    assert task_of({"architectures": ["CLIPModel"]}, clip, None) == "zero-shot-image-classification"
    assert task_of({}, clip, None) == "zero-shot-image-classification"
    head = {"architectures": ["CLIPForImageClassification"]}
    assert task_of(head, clip, None) == "image-classification"
    with pytest.raises(ConfigError, match=r"Siglip2ForImageClassification.* is a head mobius"):
        task_of({"architectures": ["Siglip2ForImageClassification"]}, family_for("siglip2"), None)
    with pytest.raises(ConfigError, match=r"CLIPTextModelWithProjection.* is a head mobius"):
        task_of({"architectures": ["CLIPTextModelWithProjection"]}, clip, None)
    bert = family_for("bert")
    assert task_of({"architectures": ["BertModel"]}, bert, None) == "feature-extraction"


def test_altclip_reads_the_hub_layout_and_the_one_transformers_5_saves(tmp_path):
    """The Hub's AltCLIP checkpoints name the vision layers `layers.N`; transformers 5 saves
    them as `layer.N` (it renames every `layers.` to BERT's `layer.`): both convert alike."""
    case = CASES["altclip"]
    make_encoder("altclip", case, "AltCLIPModel", tmp_path / "saved")
    hub = tmp_path / "hub"
    shutil.copytree(tmp_path / "saved", hub)
    tensors = load_file(hub / "model.safetensors")
    saved_as, hub_name = "vision_model.encoder.layer.", "vision_model.encoder.layers."
    assert any(name.startswith(saved_as) for name in tensors)
    renamed = {name.replace(saved_as, hub_name): t for name, t in tensors.items()}
    save_file(renamed, hub / "model.safetensors", metadata={"format": "pt"})
    feeds = INPUTS["text+image"](case.config)
    outputs = []
    for folder in (tmp_path / "saved", hub):
        package = build(str(folder), progress=False)
        package.save(folder / "onnx-package", progress=False)
        session = ort.InferenceSession(folder / "onnx-package" / "onnx" / "vision_model.onnx")
        outputs.append(session.run(None, {"pixel_values": feeds["pixel_values"]}))
    for saved, hub_layout in zip(*outputs, strict=True):
        np.testing.assert_array_equal(saved, hub_layout)


def test_clipseg_converts_the_segmentation_checkpoints_towers(tmp_path):
    """The Hub's CLIPSeg checkpoints are CLIPSegForImageSegmentation's (the towers under `clip.`
    beside the decoder): converted for zero-shot, they give what CLIPSegModel does."""
    case = CASES["clipseg"]
    config = transformers.AutoConfig.for_model(**case.config, extract_layers=[1], reduce_dim=16)
    torch.manual_seed(0)
    transformers.CLIPSegForImageSegmentation(config).save_pretrained(tmp_path / "hf")
    reference = transformers.CLIPSegModel.from_pretrained(tmp_path / "hf").eval()
    package = build(str(tmp_path / "hf"), progress=False, task="zero-shot-image-classification")
    package.save(tmp_path / "onnx-package", progress=False)
    session = ort.InferenceSession(tmp_path / "onnx-package" / "onnx" / "model.onnx")
    feeds = case_inputs(case)
    logits = session.run(
        ["logits_per_image"], {i.name: feeds[i.name] for i in session.get_inputs()}
    )
    with torch.no_grad():
        want = reference(**{name: torch.from_numpy(v) for name, v in feeds.items()})
    np.testing.assert_allclose(logits[0], want.logits_per_image.numpy(), atol=1e-4)

"""Speech encoders beyond the parity matrix: f16 graphs, the older weight-norm tensor names,
pre-training checkpoints converted for their hidden states, the task a head class names, and
the options refused by name."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
import torch
import transformers

from converter import build
from converter.errors import ConfigError
from converter.registry import family_for
from converter.tasks.choice import task_of
from tests.checkpoints import read_safetensors, write_safetensors
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import INPUTS, audio_inputs, make_encoder

CASE = CASES["wav2vec2"]
# a headless checkpoint: its names lack the `wav2vec2.` prefix
WEIGHT_NORM = "encoder.pos_conv_embed.conv.parametrizations.weight.original"


def _run(folder, feeds):
    session = ort.InferenceSession(folder / "onnx" / "model.onnx")
    return session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})[0]


@pytest.mark.parametrize(
    ("case_id", "head"),
    [
        ("hubert:batch_norm", "HubertModel"),
        ("data2vec-audio", "Data2VecAudioModel"),
        ("wavlm", "WavLMModel"),
        ("sew", "SEWModel"),
        ("wav2vec2-conformer", "Wav2Vec2ConformerModel"),
        ("wav2vec2-conformer:rotary", "Wav2Vec2ConformerModel"),
        ("audio-spectrogram-transformer", "ASTModel"),
    ],
)
def test_f16_graphs_run_close_to_f32(tmp_path, case_id, head):
    """Tables computed in float32 (positions, buckets) reach the f16 graph in f16."""
    case = CASES[case_id]
    make_encoder(case_id, case, head, tmp_path / "hf")
    feeds = INPUTS[case.inputs](case.config)
    outputs = {}
    for dtype in ("f32", "f16"):
        package = build(str(tmp_path / "hf"), ep="cpu", dtype=dtype, progress=False)
        package.save(tmp_path / dtype, progress=False)
        session = ort.InferenceSession(tmp_path / dtype / package.components[0].filename)
        inputs = {i.name: feeds[i.name] for i in session.get_inputs()}
        outputs[dtype] = session.run(None, inputs)[0].astype(np.float32)
    assert np.abs(outputs["f16"] - outputs["f32"]).max() <= 2e-2


def test_older_weight_norm_names_fold_to_the_same_weight(tmp_path):
    make_encoder("wav2vec2", CASE, "Wav2Vec2Model", tmp_path / "hf")
    feeds = audio_inputs(CASE.config)
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "new", progress=False)
    weights = tmp_path / "hf" / "model.safetensors"
    tensors = read_safetensors(weights)
    stem = WEIGHT_NORM.removesuffix(".parametrizations.weight.original")
    tensors[f"{stem}.weight_g"] = tensors.pop(f"{WEIGHT_NORM}0")
    tensors[f"{stem}.weight_v"] = tensors.pop(f"{WEIGHT_NORM}1")
    write_safetensors(weights, tensors)
    build(str(tmp_path / "hf"), progress=False).save(tmp_path / "old", progress=False)
    np.testing.assert_array_equal(_run(tmp_path / "old", feeds), _run(tmp_path / "new", feeds))


def test_a_pretraining_checkpoint_converts_for_its_hidden_states(tmp_path):
    config = transformers.AutoConfig.for_model(
        **CASE.config, codevector_dim=16, proj_codevector_dim=16, num_codevectors_per_group=4
    )
    torch.manual_seed(0)
    model = transformers.Wav2Vec2ForPreTraining(config).eval()
    model.save_pretrained(tmp_path / "hf")
    with pytest.raises(ConfigError, match=r"Wav2Vec2ForPreTraining.*--task"):
        build(str(tmp_path / "hf"), progress=False)
    package = build(str(tmp_path / "hf"), task="feature-extraction", progress=False)
    package.save(tmp_path / "onnx", progress=False)
    feeds = audio_inputs(CASE.config)
    with torch.no_grad():
        expected = model.wav2vec2(torch.from_numpy(feeds["input_values"])).last_hidden_state
    assert np.abs(_run(tmp_path / "onnx", feeds) - expected.numpy()).max() <= 1e-4


@pytest.mark.parametrize(
    ("model_type", "head", "task"),
    [
        ("wav2vec2", "Wav2Vec2ForSequenceClassification", "audio-classification"),
        ("wav2vec2", "Wav2Vec2ForCTC", "automatic-speech-recognition"),
        ("hubert", "HubertModel", "feature-extraction"),
        ("bert", "BertForSequenceClassification", "text-classification"),
    ],
)
def test_the_head_class_names_the_task(model_type, head, task):
    assert task_of({"architectures": [head]}, family_for(model_type), None) == task


@pytest.mark.parametrize(
    ("key", "value"),
    [("add_adapter", True), ("adapter_attn_dim", 16), ("feat_extract_norm", "batch")],
)
def test_unbuilt_options_are_refused_by_name(tmp_path, key, value):
    make_encoder("wav2vec2", CASE, "Wav2Vec2Model", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config[key] = value
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=f"'{key}'"):
        build(str(tmp_path), progress=False)

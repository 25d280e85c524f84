"""sentence-transformers (backend="onnx") and Optimum's ORTModel classes load mobius's encoder
export unchanged, and give the numbers of the torch model.

The tiny models are made where the clients run (their own venv, tests/legacy_clients), mobius
converts them here, and only its onnx/ folder is put beside the model's own files: what a mobius
pull request adds to a sentence-transformers repo."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from converter import build

# Different lengths, one padded batch; "harbour" is not in the vocabulary ([UNK]).
SENTENCES = [
    "the river",
    "a small boat under the old bridge at night",
    "stone",
    "water and light run to the sea , the harbour .",
]
PAIRS = [["the river", "a boat"], ["stone", "the old bridge at night"], ["sea", "sea"]]


def add_mobius_onnx(folder: Path, task: str, ep: str = "default", dtype: str = "f32") -> None:
    """Converts `folder` with mobius and copies the export's onnx/ folder, and nothing else,
    into it (the export itself goes beside `folder`)."""
    package = build(str(folder), task=task, ep=ep, dtype=dtype, progress=False)
    assert package.task.name == task
    out = package.save(folder.with_name(f"{folder.name}-export"), progress=False)
    shutil.copytree(out / "onnx", folder / "onnx")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return a @ b.T


@pytest.fixture(scope="module", params=["saved", "classic"])
def sentence_model(request, legacy_clients, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("legacy-st") / f"tiny-st-{request.param}"
    legacy_clients("make-sentence-transformer", folder=str(folder), layout=request.param)
    add_mobius_onnx(folder, "feature-extraction")
    return folder


@pytest.fixture(scope="module")
def classifier(legacy_clients, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("legacy-cls") / "tiny-classifier"
    legacy_clients("make-classifier", folder=str(folder))
    add_mobius_onnx(folder, "text-classification")
    return folder


def test_sentence_transformers_onnx_backend_matches_torch(legacy_clients, sentence_model):
    result = legacy_clients(
        "sentence-transformers", folder=str(sentence_model), sentences=SENTENCES
    )
    assert Path(result["onnx_file"]) == (sentence_model / "onnx" / "model.onnx").resolve()
    torch_embeddings, onnx_embeddings = np.array(result["torch"]), np.array(result["onnx"])
    assert torch_embeddings.shape == (len(SENTENCES), 32)
    same = cosines(onnx_embeddings, torch_embeddings)
    assert np.diag(same).min() >= 0.9999, np.diag(same)
    # The sentences are told apart, so a graph that misread its inputs could not pass.
    others = cosines(torch_embeddings, torch_embeddings)[~np.eye(len(SENTENCES), dtype=bool)]
    assert others.max() < 0.99


# Another EP's graph at onnx/model.onnx, and the other dtypes under the names people pass as
# model_kwargs={"file_name": ...}. int4 and int8 on random weights move embeddings (their
# numbers are the parity tests' business): here they must load and still point the same way.
@pytest.mark.parametrize(
    ("ep", "dtype", "file_name", "least"),
    [
        ("cpu", "f32", "", 0.9999),
        ("default", "f16", "onnx/model_fp16.onnx", 0.9999),
        ("cpu", "int4", "onnx/model_q4.onnx", 0.9),
        ("default", "int8", "onnx/model_quantized.onnx", 0.9),
    ],
)
def test_sentence_transformers_loads_each_variant(
    legacy_clients, tmp_path, ep, dtype, file_name, least
):
    folder = tmp_path / "tiny-st"
    legacy_clients("make-sentence-transformer", folder=str(folder))
    add_mobius_onnx(folder, "feature-extraction", ep, dtype)
    result = legacy_clients(
        "sentence-transformers", folder=str(folder), sentences=SENTENCES, file_name=file_name
    )
    assert Path(result["onnx_file"]) == (folder / (file_name or "onnx/model.onnx")).resolve()
    same = np.diag(cosines(np.array(result["onnx"]), np.array(result["torch"])))
    assert same.min() >= least, same


def test_optimum_feature_extraction_matches_transformers(legacy_clients, sentence_model):
    result = legacy_clients(
        "optimum", folder=str(sentence_model), task="feature-extraction", sentences=SENTENCES
    )
    assert Path(result["onnx_file"]) == (sentence_model / "onnx" / "model.onnx").resolve()
    mask = np.array(result["attention_mask"], dtype=bool)
    assert not mask.all()  # padded rows: the padded positions are not compared
    diff = np.abs(np.array(result["onnx"]) - np.array(result["torch"]))[mask]
    assert diff.max() <= 1e-4


def test_optimum_sequence_classification_matches_transformers(legacy_clients, classifier):
    result = legacy_clients(
        "optimum", folder=str(classifier), task="text-classification", sentences=SENTENCES
    )
    assert Path(result["onnx_file"]) == (classifier / "onnx" / "model.onnx").resolve()
    logits, reference = np.array(result["onnx"]), np.array(result["torch"])
    assert logits.shape == (len(SENTENCES), 3)
    assert np.abs(logits - reference).max() <= 1e-4


def test_cross_encoder_onnx_backend_matches_torch(legacy_clients, classifier):
    """Sentence pairs: the segment ids (token_type_ids) reach the graph."""
    result = legacy_clients("cross-encoder", folder=str(classifier), pairs=PAIRS)
    assert Path(result["onnx_file"]) == (classifier / "onnx" / "model.onnx").resolve()
    assert np.abs(np.array(result["onnx"]) - np.array(result["torch"])).max() <= 1e-4

"""The clients as people call them, on a folder with onnx/model.onnx (runs in the venv).

Each returns the ONNX path the client actually opened, so a test can tell a loaded export
from one the client made itself (sentence-transformers exports silently when it finds none)."""

import shutil
import tempfile
from pathlib import Path

import torch
from optimum.onnxruntime import ORTModelForFeatureExtraction, ORTModelForSequenceClassification
from sentence_transformers import CrossEncoder, SentenceTransformer
from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

TASKS = {
    "feature-extraction": (ORTModelForFeatureExtraction, AutoModel, "last_hidden_state"),
    "text-classification": (
        ORTModelForSequenceClassification,
        AutoModelForSequenceClassification,
        "logits",
    ),
}


def _opened(ort_model) -> str:
    return str(Path(ort_model.path).resolve())


def sentence_transformers(folder: str, sentences: list[str]) -> dict:
    """SentenceTransformer embeddings from the torch and the onnx backend of one folder, the
    sentences in one padded batch."""
    result = {}
    for backend in ("torch", "onnx"):
        model = SentenceTransformer(folder, backend=backend, device="cpu")
        result[backend] = model.encode(sentences, batch_size=len(sentences)).tolist()
    result["onnx_file"] = _opened(model[0].model)
    return result


def cross_encoder(folder: str, pairs: list[list[str]]) -> dict:
    """CrossEncoder scores (sentence pairs: token_type_ids matter) from both backends."""
    result = {}
    for backend in ("torch", "onnx"):
        model = CrossEncoder(folder, backend=backend, device="cpu")
        result[backend] = model.predict([tuple(p) for p in pairs], batch_size=len(pairs)).tolist()
    result["onnx_file"] = _opened(model.model)
    return result


def optimum(folder: str, task: str, sentences: list[str]) -> dict:
    """Optimum's ORTModel output beside transformers' on the same padded batch."""
    ort_class, torch_class, output = TASKS[task]
    inputs = AutoTokenizer.from_pretrained(folder)(sentences, padding=True, return_tensors="pt")
    ort_model = ort_class.from_pretrained(folder)
    with torch.no_grad():
        reference = getattr(torch_class.from_pretrained(folder).eval()(**inputs), output)
    return {
        "onnx": getattr(ort_model(**inputs), output).tolist(),
        "torch": reference.tolist(),
        "attention_mask": inputs["attention_mask"].tolist(),
        "onnx_inputs": list(ort_model.input_names),
        "onnx_file": _opened(ort_model),
    }


def optimum_export(folder: str, task: str) -> dict:
    """Optimum's own exporter writes folder/onnx/model.onnx: a known-good export that proves
    the harness, not mobius."""
    from optimum.exporters.onnx import main_export

    with tempfile.TemporaryDirectory() as out:
        main_export(folder, out, task=task, library_name="transformers", no_post_process=True)
        (Path(folder) / "onnx").mkdir(exist_ok=True)
        shutil.move(Path(out) / "model.onnx", Path(folder) / "onnx" / "model.onnx")
    return {"onnx_file": str(Path(folder) / "onnx" / "model.onnx")}

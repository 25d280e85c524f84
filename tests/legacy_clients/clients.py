"""The clients as people call them, on a folder with onnx/model.onnx (runs in the venv).

Each returns the ONNX path the client actually opened, so a test can tell a loaded export
from one the client made itself (sentence-transformers exports silently when it finds none)."""

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


def sentence_transformers(folder: str, sentences: list[str], file_name: str = "") -> dict:
    """SentenceTransformer embeddings from the torch and the onnx backend of one folder, the
    sentences in one padded batch; `file_name` picks another graph than onnx/model.onnx, as
    people do (model_kwargs={"file_name": "onnx/model_fp16.onnx"})."""
    result = {}
    for backend in ("torch", "onnx"):
        kwargs = {"file_name": file_name} if file_name and backend == "onnx" else {}
        model = SentenceTransformer(folder, backend=backend, device="cpu", model_kwargs=kwargs)
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
        "onnx_file": _opened(ort_model),
    }

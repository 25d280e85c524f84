"""The clients as people call them, on a folder with onnx/model.onnx (runs in the venv).

Each returns the ONNX path the client actually opened, so a test can tell a loaded export
from one the client made itself (sentence-transformers exports silently when it finds none)."""

from pathlib import Path

import torch
from optimum.onnxruntime import (
    ORTModelForFeatureExtraction,
    ORTModelForSeq2SeqLM,
    ORTModelForSequenceClassification,
    ORTModelForSpeechSeq2Seq,
)
from sentence_transformers import CrossEncoder, SentenceTransformer
from transformers import (
    AutoModel,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoModelForSpeechSeq2Seq,
    AutoTokenizer,
)
from transformers.modeling_outputs import BaseModelOutput

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


def optimum_seq2seq(folder: str, texts: list[str], options: dict) -> dict:
    """Greedy tokens of ORTModelForSeq2SeqLM (its merged decoder with the cache) and of the
    torch model on one padded batch, generate() given `options` on both sides."""
    inputs = AutoTokenizer.from_pretrained(folder)(texts, padding=True, return_tensors="pt")
    ort_model = ORTModelForSeq2SeqLM.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    settings = {**options, "do_sample": False, "num_beams": 1}
    with torch.no_grad():
        reference = model.generate(**inputs, **settings)
    return {
        "onnx": ort_model.generate(**inputs, **settings).tolist(),
        "torch": reference.tolist(),
        "attention_mask": inputs["attention_mask"].tolist(),
        "merged": ort_model.decoder.is_merged,
        "onnx_files": [_opened(ort_model.encoder), _opened(ort_model.decoder)],
    }


def optimum_speech_seq2seq(folder: str, features: list, decoder_ids: list, first: int) -> dict:
    """ORTModelForSpeechSeq2Seq's logits of teacher-forced decoder tokens (the first `first`
    without a cache, then one per call with the past it returned) beside the torch model's."""
    features, ids = torch.tensor(features), torch.tensor(decoder_ids)
    ort_model = ORTModelForSpeechSeq2Seq.from_pretrained(folder)
    model = AutoModelForSpeechSeq2Seq.from_pretrained(folder).eval()
    with torch.no_grad():
        reference = model(input_features=features, decoder_input_ids=ids).logits
        out = ort_model(input_features=features, decoder_input_ids=ids[:, :first])
        steps, past = [out.logits], out.past_key_values
        for i in range(first, ids.shape[1]):
            out = ort_model(
                encoder_outputs=BaseModelOutput(out.encoder_last_hidden_state),
                decoder_input_ids=ids[:, i : i + 1],
                past_key_values=past,
            )
            steps.append(out.logits)
            past = out.past_key_values
    return {
        "onnx": torch.cat(steps, dim=1).tolist(),
        "torch": reference.tolist(),
        "merged": ort_model.decoder.is_merged,
        "onnx_files": [_opened(ort_model.encoder), _opened(ort_model.decoder)],
    }


def optimum_generates(folder: str, inputs: dict, speech: bool) -> dict:
    """Greedy tokens of ORTModelForSeq2SeqLM (ORTModelForSpeechSeq2Seq with `speech`) loaded
    from `folder` and given `inputs` (lists, by name): whether Optimum runs the export at all."""
    ort_class = ORTModelForSpeechSeq2Seq if speech else ORTModelForSeq2SeqLM
    ort_model = ort_class.from_pretrained(folder)
    tensors = {name: torch.tensor(value) for name, value in inputs.items()}
    tokens = ort_model.generate(**tensors, max_new_tokens=3, do_sample=False, num_beams=1)
    return {"tokens": tokens.tolist(), "merged": ort_model.decoder.is_merged}

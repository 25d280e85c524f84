"""Transformers.js runs two-tower exports unchanged: `mobius build` of a tiny CLIP and a tiny
SigLIP (with a word-level tokenizer and an image processor of their size) gives, through
Transformers.js' zero-shot-image-classification pipeline, the labels and scores of transformers'
own pipeline; the fp16 graphs too (their outputs are float32)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
import transformers
from PIL import Image
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from converter import build

LABELS = ["a cat", "a dog", "a bird"]
TEMPLATE = "This is a photo of {}"  # Transformers.js' default (transformers' ends with a period)
WORDS = sorted({w for text in [TEMPLATE.format(""), *LABELS] for w in text.lower().split()})
SPECIAL = ["<|startoftext|>", "<|endoftext|>", "[UNK]"]
TOWER = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2}
TOWER["num_attention_heads"] = 4
PROCESSORS = {
    "clip": transformers.CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ),
    "siglip": transformers.SiglipImageProcessor(size={"height": 32, "width": 32}),
}


def tokenizer() -> transformers.PreTrainedTokenizerFast:
    """Lowercased words, each a token, between a start and an end token (also the padding)."""
    vocab = {token: i for i, token in enumerate([*SPECIAL, *WORDS])}
    words = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    words.normalizer = normalizers.Lowercase()
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.post_processor = processors.TemplateProcessing(
        single="<|startoftext|> $A <|endoftext|>",
        special_tokens=[("<|startoftext|>", 0), ("<|endoftext|>", 1)],
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=words,
        bos_token="<|startoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        unk_token="[UNK]",
        model_max_length=64,  # SigLIP's pipelines pad to 64
    )


def checkpoint(folder, model_type: str):
    """A random `model_type` two-tower model with its tokenizer and image processor."""
    text = {**TOWER, "vocab_size": 32, "max_position_embeddings": 64}
    text.update(bos_token_id=0, eos_token_id=1, pad_token_id=1)
    vision = {**TOWER, "image_size": 32, "patch_size": 8}
    top = {"projection_dim": 48} if model_type == "clip" else {}
    config = transformers.AutoConfig.for_model(
        model_type, text_config=text, vision_config=vision, **top
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForZeroShotImageClassification.from_config(config)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
    model.eval().save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    PROCESSORS[model_type].save_pretrained(folder)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    path = tmp_path_factory.mktemp("image") / "image.png"
    pixels = np.random.default_rng(0).random((32, 32, 3)) * 255
    Image.fromarray(pixels.astype(np.uint8)).save(path)  # the processors' size: not resized
    return path


@pytest.mark.parametrize("model_type", ["clip", "siglip"])
def test_zero_shot_pipeline_gives_transformers_scores(transformers_js, tmp_path, image, model_type):
    checkpoint(tmp_path / "hf", model_type)
    pipe = transformers.pipeline("zero-shot-image-classification", model=str(tmp_path / "hf"))
    expected = pipe(str(image), candidate_labels=LABELS, hypothesis_template=TEMPLATE)
    models = tmp_path / "js"
    build(str(tmp_path / "hf"), progress=False).save(models / "model", progress=False)
    f16 = build(str(tmp_path / "hf"), dtype="f16", progress=False)
    for graph in f16.save(tmp_path / "f16", progress=False).glob("onnx/*.onnx"):
        shutil.copy(graph, models / "model" / "onnx")
    call = {"inputs": str(image), "options": LABELS}  # pipe(image, candidate_labels)
    for dtype, tolerance in (("fp32", 1e-5), ("fp16", 1e-2)):
        request = {"models": str(models), "model": "model", "options": {"dtype": dtype}}
        request["task"] = "zero-shot-image-classification"
        [results] = transformers_js.run({**request, "calls": [call]})
        scores = {r["label"]: r["score"] for r in results}
        assert set(scores) == set(LABELS)
        for want in expected:
            assert abs(scores[want["label"]] - want["score"]) <= tolerance, (dtype, want)

"""transformers as the reference: the same checkpoint in float32, eager attention (or the one
the family names), its own KV cache. Used by `validate` and by the parity tests (torch and
transformers load only here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from converter.config import model_type_of
from converter.registry import families, family_for
from converter.validate.reference_fixes import corrected


class TransformersReference:
    """A causal LM stepped like the ONNX decoder: prefill, then one token per call."""

    def __init__(self, model) -> None:
        import torch

        self.torch, self.model = torch, model

    @classmethod
    def load(cls, folder: Path, text_only: bool = False) -> TransformersReference:
        """The causal LM in `folder`; `text_only`: a multimodal model fed no images, as its
        text-only export runs."""
        import torch
        import transformers

        config = json.loads((Path(folder) / "config.json").read_text())
        attention = family_for(model_type_of(config)).reference_attention
        auto = "AutoModelForImageTextToText" if text_only else "AutoModelForCausalLM"
        model = getattr(transformers, auto).from_pretrained(
            folder, dtype=torch.float32, attn_implementation=attention
        )
        return cls(model.eval())

    def run(self, ids: np.ndarray, mask: np.ndarray, steps: list[np.ndarray]) -> list[np.ndarray]:
        """Logits (float32) of the prefill and of each step in `steps`, positions from the mask
        (so left padding counts from the first real token). A model that keeps no cache
        (OpenAI GPT) reads the whole sequence again at each step."""
        torch, outputs, cache = self.torch, [], None
        position = np.clip(mask.cumsum(-1) - 1, 0, None)
        seen = ids
        with torch.no_grad():
            for token in [ids, *steps]:
                if outputs:
                    mask = np.concatenate([mask, np.ones((mask.shape[0], 1), mask.dtype)], 1)
                    position = np.concatenate([position, position[:, -1:] + 1], 1)
                    seen = np.concatenate([seen, token], 1)
                new = token.shape[1] if cache is not None else seen.shape[1]
                out = self.model(
                    input_ids=torch.tensor(seen[:, -new:]),
                    attention_mask=torch.tensor(mask),
                    position_ids=torch.tensor(position[:, -new:]),
                    cache=cache,
                    use_cache=True,
                )
                cache = out.get("cache")
                outputs.append(out.logits[:, -token.shape[1] :].float().numpy())
        return outputs

    def greedy(self, ids: np.ndarray, new_tokens: int) -> tuple[list[int], float]:
        with self.torch.no_grad():
            out = self.model.generate(
                self.torch.tensor(ids),
                attention_mask=self.torch.ones(ids.shape, dtype=self.torch.long),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
            )
        return out[0, ids.shape[1] :].tolist(), float("nan")


# the transformers class that holds each encoder task's head
ENCODER_CLASSES = {
    "feature-extraction": "AutoModel",
    "fill-mask": "AutoModelForMaskedLM",
    "text-classification": "AutoModelForSequenceClassification",
    "token-classification": "AutoModelForTokenClassification",
    "question-answering": "AutoModelForQuestionAnswering",
    "image-classification": "AutoModelForImageClassification",
    "image-feature-extraction": "AutoModel",
    "automatic-speech-recognition": "AutoModelForCTC",
    "audio-classification": "AutoModelForAudioClassification",
    "zero-shot-image-classification": "AutoModelForZeroShotImageClassification",
}
# the pooled output of a two-tower model's text and vision graphs, by the names they may give it
FEATURE_NAMES = {
    "text": ("text_embeds", "pooler_output"),
    "vision": ("image_embeds", "pooler_output"),
}


class TransformersEncoder:
    """An encoder with the task's head, fed the graph's own inputs; every output by name."""

    def __init__(self, model) -> None:
        import torch

        self.torch, self.model = torch, model

    @classmethod
    def load(cls, folder: Path, task: str) -> TransformersEncoder:
        import torch
        import transformers

        auto = getattr(transformers, _own_head(folder) or ENCODER_CLASSES[task])
        model = auto.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
        return cls(model.eval())

    def outputs(self, role: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        torch = self.torch
        with torch.no_grad():
            out = model_outputs(
                self.model, role, {k: torch.from_numpy(v) for k, v in feeds.items()}
            )
        return {k: v.float().numpy() for k, v in out.items() if isinstance(v, torch.Tensor)}


def _own_head(folder: Path) -> str | None:
    """The head class config.json names where its family's graph gives that head's outputs
    beside the task's (`reference_heads`: NeoMME's retrieval outputs with its features)."""
    config = json.loads((Path(folder) / "config.json").read_text())
    heads = getattr(family_for(model_type_of(config)).model_class, "reference_heads", ())
    named = (config.get("architectures") or [None])[0]
    return named if named in heads else None


def model_outputs(model, role: str, tensors: dict) -> dict:
    """The outputs of `model` for a graph of `role`: its own, or for the text and vision graphs
    of a two-tower model its text or image features (last_hidden_state, and the pooled
    features under each name those graphs give them)."""
    if role not in FEATURE_NAMES:
        return dict(model(**reference_inputs(model, tensors)))
    features = model.get_text_features if role == "text" else model.get_image_features
    out = features(**tensors)
    pooled = {name: out.pooler_output for name in FEATURE_NAMES[role]}
    return {"last_hidden_state": out.last_hidden_state, **pooled}


def reference_inputs(model, tensors: dict) -> dict:
    """The inputs as transformers is fed them: a family whose model class says
    `reference_key_mask(config)` gets the padding mask as the additive [batch, 1, 1, keys] mask
    (transformers passes a 4-D mask through as it is)."""
    import torch

    family = families().get(getattr(model.config, "model_type", None))
    key_mask = getattr(family and family.model_class, "reference_key_mask", None)
    mask = tensors.get("attention_mask")
    if key_mask is None or mask is None or not key_mask(model.config):
        return tensors
    low = torch.finfo(torch.float32).min
    return {**tensors, "attention_mask": (1.0 - mask[:, None, None, :].float()) * low}


# the transformers class of an encoder-decoder, by the modality its encoder reads
SEQ2SEQ_CLASSES = {"text": "AutoModelForSeq2SeqLM", "audio": "AutoModelForSpeechSeq2Seq"}


class TransformersSeq2Seq:
    """An encoder-decoder fed the ONNX encoder's inputs and teacher-forced decoder tokens, as
    converter/validate/seq2seq_runtime.py's OnnxSeq2Seq is run: the same `run` and `greedy`.
    Greedy decoding is plain argmax (generation_config's beams and penalties left out, as the
    ONNX side applies none)."""

    def __init__(self, model) -> None:
        import torch

        self.torch, self.model = torch, model

    @classmethod
    def load(cls, folder: Path) -> TransformersSeq2Seq:
        """The checkpoint in `folder` as its family's modality loads it (speech models by
        AutoModelForSpeechSeq2Seq)."""
        import torch
        import transformers

        config = json.loads((Path(folder) / "config.json").read_text())
        modality = getattr(family_for(model_type_of(config)).model_class, "modality", "text")
        auto = SEQ2SEQ_CLASSES[modality]
        model = getattr(transformers, auto).from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager"
        )
        return cls(corrected(model).eval())

    def logits(self, feeds: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
        torch = self.torch
        tensors = {k: torch.from_numpy(v) for k, v in feeds.items()}
        with torch.no_grad():
            # without a cache: FSMT's decoder masks nothing causally when it builds one
            ids = torch.from_numpy(ids)
            out = self.model(**tensors, decoder_input_ids=ids, use_cache=False)
        return out.logits.float().numpy()

    def run(self, feeds: dict[str, np.ndarray], ids: np.ndarray, first: int) -> list[np.ndarray]:
        """The logits of `ids`, split as the ONNX side's steps: the first `first`, then one
        per step."""
        logits = self.logits(feeds, ids)
        return [logits[:, :first], *(logits[:, i : i + 1] for i in range(first, ids.shape[1]))]

    def greedy(self, feeds: dict[str, np.ndarray], start: int, new_tokens: int):
        batch = next(iter(feeds.values())).shape[0]
        ids = np.full((batch, 1), start, dtype=np.int64)
        for _ in range(new_tokens):
            step = self.logits(feeds, ids)[:, -1].argmax(-1)
            ids = np.concatenate([ids, step[:, None]], axis=1)
        return ids[:, 1:].tolist(), float("nan")


# VLM types whose checkpoints transformers 5.24 loads back only through the head that wraps
# the VLM (its `.model`): ShieldGemma 2's keys sit one `model.` deeper than Gemma 3's
WRAPPED_VLMS = {"shieldgemma2": "ShieldGemma2ForImageClassification"}


class TransformersVisionLanguage:
    """A vision-language model fed the package's image inputs (by the vision graph's names) and
    a prompt holding the image tokens: the same `run` and `greedy` as
    converter/validate/vlm_runtime.py's OnnxVisionLanguage, teacher-forced in one pass. Greedy
    decoding is plain argmax."""

    def __init__(self, model, token_types: str = "") -> None:
        import torch

        self.torch, self.model, self.token_types = torch, model, token_types

    @classmethod
    def load(cls, folder: Path) -> TransformersVisionLanguage:
        import torch
        import transformers

        from converter.registry import family_for

        config = transformers.AutoConfig.from_pretrained(folder)
        options = {"dtype": torch.float32, "attn_implementation": "eager"}
        wrapper = WRAPPED_VLMS.get(config.model_type)
        if wrapper is None:
            model = transformers.AutoModelForImageTextToText.from_pretrained(folder, **options)
        else:
            model = getattr(transformers, wrapper).from_pretrained(folder, **options).model
        family = family_for(config.model_type)
        return cls(model.eval(), family.model_class.token_types)

    def image_features(self, image: dict[str, np.ndarray]) -> np.ndarray:
        """Every image's projected features in order, [num_image_tokens, hidden], and beside
        them each DeepStack level's (Qwen3-VL), as the vision graph packs them."""
        torch = self.torch
        # DeepSeek-VL's generation class leaves get_image_features to its inner model
        inner = self.model if hasattr(self.model, "get_image_features") else self.model.model
        with torch.no_grad():
            found = inner.get_image_features(**{k: torch.from_numpy(v) for k, v in image.items()})
            levels = [found.pooler_output, *(getattr(found, "deepstack_features", None) or [])]
            rows = [torch.cat([f.reshape(-1, f.shape[-1]) for f in level]) for level in levels]
        return torch.cat(rows, dim=-1).float().numpy()

    def inputs_embeds(self, image: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
        """The prompt's token embeddings with the image token's rows replaced, in order (text
        rows padded with zeros to the packed features' width)."""
        torch = self.torch
        features = torch.from_numpy(self.image_features(image))
        with torch.no_grad():
            tokens = torch.from_numpy(ids)
            embeds = self.model.get_input_embeddings()(tokens)
            embeds = torch.nn.functional.pad(embeds, (0, features.shape[-1] - embeds.shape[-1]))
            mask = (tokens == self.model.config.image_token_id)[..., None].expand_as(embeds)
            return embeds.masked_scatter(mask, features.to(embeds.dtype)).float().numpy()

    def logits(self, image: dict[str, np.ndarray], ids: np.ndarray, prompt: int) -> np.ndarray:
        """The logits of `ids`, whose first `prompt` tokens are the prompt."""
        import inspect

        torch = self.torch
        tensors = {k: torch.from_numpy(v) for k, v in image.items()}
        tensors["input_ids"] = torch.from_numpy(ids)
        image_tokens = (ids == self.model.config.image_token_id).astype(np.int64)
        if "mm_token_type_ids" in inspect.signature(self.model.forward).parameters:
            # without them transformers 5 gives Qwen-VL text positions only
            tensors["mm_token_type_ids"] = torch.from_numpy(image_tokens)
        if self.token_types == "image":  # as Gemma 3's processor gives them
            tensors["token_type_ids"] = torch.from_numpy(image_tokens)
        elif self.token_types == "prefix":  # PaliGemma's: 0 on the prompt, 1 after it
            tensors["token_type_ids"] = torch.from_numpy(
                np.broadcast_to(np.arange(ids.shape[1]) >= prompt, ids.shape).astype(np.int64)
            )
        with torch.no_grad():
            return self.model(**tensors).logits.float().numpy()

    def run(self, image, ids: np.ndarray, steps: list[np.ndarray], positions=None):
        """Logits of the prompt and of each step's tokens (`positions` are the ONNX side's
        concern: transformers computes its own)."""
        length = ids.shape[1]
        logits = self.logits(image, np.concatenate([ids, *steps], axis=1), length)
        return [
            logits[:, :length],
            *(logits[:, length + i : length + i + 1] for i in range(len(steps))),
        ]

    def greedy(
        self, image, ids: np.ndarray, new_tokens: int, positions=None
    ) -> tuple[list[int], float]:
        """Greedy tokens after the prompt, and no speed (the reference is not timed)."""
        tokens: list[int] = []
        for _ in range(new_tokens):
            seen = np.concatenate([ids, np.array([tokens], dtype=ids.dtype)], axis=1)
            tokens.append(int(self.logits(image, seen, ids.shape[1])[0, -1].argmax()))
        return tokens, float("nan")

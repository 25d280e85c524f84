"""A contrastive text-image model: a text tower and a vision tower under `text_model` and
`vision_model`, their projections into one space (`text_projection`, `visual_projection`; none
for SigLIP, whose towers pool to it), and the scaled cosine similarities of the normalized
embeddings (`logit_scale`, SigLIP's `logit_bias`).

The `image-classification` head (CLIPForImageClassification, SiglipForImageClassification) is
the vision tower alone, unpooled, and a `classifier` over the mean of its tokens (from
`first_token`: CLIP's skip the class token).

The zero-shot task builds one graph per part (both towers, the text tower, the vision tower);
a parameter belongs to one graph, so `part` makes a fresh module of each, bound by the same
checkpoint names. A tower is called with its inputs and returns (last_hidden_state, pooled);
it says how wide its hidden states are (`width`) and how many tokens an image makes
(`tokens`).
"""

from __future__ import annotations

from typing import ClassVar

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.config.two_tower import TwoTowerConfig
from converter.errors import ConfigError
from converter.tasks.encoding import BATCH, SEQUENCE
from converter.tasks.zero_shot import IMAGE_BATCH, TEXT_BATCH, ZERO_SHOT, ImageInputs

IMAGE_CLASSIFICATION = "image-classification"
MAX_INT64 = (1 << 63) - 1


class TwoTowerModel(nn.Module):
    text_cls: type
    vision_cls: type
    heads = (ZERO_SHOT,)
    # CLIPModel & co. are the zero-shot models
    head_tasks: ClassVar[dict[str, str]] = {"Model": ZERO_SHOT}
    scale_shape: tuple[int, ...] = ()  # logit_scale's shape in the checkpoints
    biased = False  # a learned logit_bias added to the scaled similarities (SigLIP)
    # what the text and vision graphs call their pooled features
    feature_names = ("text_embeds", "image_embeds")

    first_token = 0  # the first token the image classifier averages

    def __init__(self, cfg: TwoTowerConfig, dtype, ep, task: str, tensors, part: str = "both"):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        self.args, self.cfg, self.task = (cfg, dtype, ep, task, tensors), cfg, task
        self.text_model = self.vision_model = None
        if task == IMAGE_CLASSIFICATION:
            self.vision_model = self.make_vision(cfg, dtype, ep, tensors, pooled=False)
            self.classifier = Linear(cfg.vision.hidden_size, cfg.num_labels, True, dtype)
            return
        if part != "vision":
            self.text_model = self.text_cls(cfg.text, dtype, ep)
            self.text_projection = self.projection("text", self.text_model.width, dtype)
        if part != "text":
            self.vision_model = self.make_vision(cfg, dtype, ep, tensors, pooled=True)
            self.visual_projection = self.projection("vision", self.vision_model.width, dtype)
        if part == "both":
            self.make_scale(dtype)

    def make_scale(self, dtype):
        """The parameters that scale the similarities into logits (see `scaled`)."""
        self.logit_scale = nn.Parameter(list(self.scale_shape), dtype)
        self.logit_bias = nn.Parameter(list(self.scale_shape), dtype) if self.biased else None

    def scaled(self, op, similarities):
        """The cosine similarities times exp(logit_scale) (plus logit_bias)."""
        logits = op.Mul(similarities, op.Exp(self.logit_scale))
        return logits if self.logit_bias is None else op.Add(logits, self.logit_bias)

    def make_vision(self, cfg: TwoTowerConfig, dtype, ep, tensors: frozenset[str], pooled: bool):
        """The vision tower (`pooled` False: without what pools it, for the classifier)."""
        return self.vision_cls(cfg.vision, dtype, ep, pooled=pooled)

    def image_dims(self) -> tuple[int, int]:
        """The image size the graphs take (its positions are built for it)."""
        return self.cfg.vision.image_size, self.cfg.vision.image_size

    def projection(self, tower: str, width: int, dtype: ir.DataType) -> Linear | None:
        """The projection of the "text" or "vision" tower's pooled features into one space."""
        dim = self.cfg.projection_dim
        return None if dim is None else Linear(width, dim, False, dtype)

    def image_hidden_dims(self) -> list:
        """The dims of the vision tower's last_hidden_state: [images, tokens, width]."""
        return [IMAGE_BATCH, self.vision_model.tokens, self.vision_model.width]

    def part(self, which: str) -> TwoTowerModel:
        """A fresh module for one graph: "both", "text" or "vision"."""
        return type(self)(*self.args, part=which)

    @property
    def embed_dim(self) -> int:
        return self.cfg.projection_dim or self.cfg.vision.hidden_size

    def text_features(self, op, text):
        hidden, pooled = self.text_model(op, text)
        projection = self.text_projection
        return hidden, pooled if projection is None else projection(op, pooled)

    def image_features(self, op, image):
        hidden, pooled = self.vision_model(op, image)
        projection = self.visual_projection
        return hidden, pooled if projection is None else projection(op, pooled)

    def forward(self, op, *inputs) -> dict:
        """(text, image) for a zero-shot part (None for the tower it lacks), (image,) for the
        image classifier."""
        if self.task == IMAGE_CLASSIFICATION:
            return self.classify(op, ImageInputs(inputs[0].pixel_values))
        text, image = inputs
        if image is None:
            hidden, features = self.text_features(op, text)
            width = self.text_model.width
            return {
                self.feature_names[0]: (features, [TEXT_BATCH, self.embed_dim]),
                "last_hidden_state": (hidden, [TEXT_BATCH, SEQUENCE, width]),
            }
        if text is None:
            hidden, features = self.image_features(op, image)
            return {
                self.feature_names[1]: (features, [IMAGE_BATCH, self.embed_dim]),
                "last_hidden_state": (hidden, self.image_hidden_dims()),
            }
        image_embeds = _normalized(op, self.image_features(op, image)[1])
        text_embeds = _normalized(op, self.text_features(op, text)[1])
        logits = self.scaled(op, op.MatMul(text_embeds, op.Transpose(image_embeds, perm=[1, 0])))
        return {
            "logits_per_image": (op.Transpose(logits, perm=[1, 0]), [IMAGE_BATCH, TEXT_BATCH]),
            "logits_per_text": (logits, [TEXT_BATCH, IMAGE_BATCH]),
            "text_embeds": (text_embeds, [TEXT_BATCH, self.embed_dim]),
            "image_embeds": (image_embeds, [IMAGE_BATCH, self.embed_dim]),
        }

    def classify(self, op, image) -> dict:
        hidden, _ = self.vision_model(op, image)
        tokens = op.Slice(hidden, [self.first_token], [MAX_INT64], [1])
        logits = self.classifier(op, op.ReduceMean(tokens, [1], keepdims=0))
        return {"logits": (logits, [BATCH, self.cfg.num_labels])}


def _normalized(op, x):
    """x / its L2 norm over the last axis (transformers adds no epsilon)."""
    return op.Div(x, op.ReduceL2(x, [-1], keepdims=1))

"""I-JEPA: ViT without a cls token (positions for the patches only); its classifier reads the
mean of all tokens."""

from __future__ import annotations

from converter.models.vision_transformer import ViTBody, ViTEmbeddings
from converter.models.vit import ViTImageModel, ViTRules, vit_unused
from converter.registry import Family


class IJepaEmbeddings(ViTEmbeddings):
    leading = ()


class IJepaBody(ViTBody):
    embeddings_cls = IJepaEmbeddings


class IJepaImageModel(ViTImageModel):
    body_cls = IJepaBody
    body_name = "ijepa"

    def classify(self, op, features):
        return self.classifier(op, op.ReduceMean(features.hidden, [1], keepdims=0))


FAMILIES = [
    Family(
        "ijepa",
        IJepaImageModel,
        "ViT without a cls token; the classifier reads the mean token",
        ("facebook/ijepa_vith14_1k",),
        rules=ViTRules(),
        task="image-feature-extraction",
        category="vision",
        unused=vit_unused("ijepa"),
        prefix="ijepa.",
    ),
]

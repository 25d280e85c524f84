"""I-JEPA: ViT's layers over patches without a cls token (converter/models/vit.py); its
classifier reads the mean token."""

from __future__ import annotations

from converter.models.vision import VisionEncoderModel
from converter.models.vision_transformer import ViTBody, ViTEmbeddings
from converter.models.vit import ViTRules, vit_unused
from converter.registry import Family


class IJepaEmbeddings(ViTEmbeddings):
    leading = ()


class IJepaBody(ViTBody):
    embeddings_cls = IJepaEmbeddings


class IJepaImageModel(VisionEncoderModel):
    body_cls = IJepaBody
    body_name = "ijepa"

    def uses_pooler(self, task, tensors):
        # IJepaModel builds its pooler only when asked (add_pooling_layer)
        return task == "image-feature-extraction" and self.has(tensors, "pooler.dense.weight")

    def classify(self, op, features):
        return self.classifier(op, op.ReduceMean(features.hidden, [1], keepdims=0))


FAMILIES = [
    Family(
        "ijepa",
        IJepaImageModel,
        "ViT layers over patches only (no cls token), learned positions",
        ("facebook/ijepa_vith14_1k",),
        rules=ViTRules(),
        task="image-feature-extraction",
        category="vision",
        unused=vit_unused("ijepa"),
        prefix="ijepa.",
    ),
]

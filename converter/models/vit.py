"""ViT: the patch encoder whose layout DeiT, DINOv2 and BEiT share
(converter/models/vision_transformer.py); its classifier reads the cls token. ViT-MSN's
checkpoints are ViT's without a pooler."""

from __future__ import annotations

from converter.config.vision import VisionRules
from converter.models.vision import VisionEncoderModel, first_token
from converter.models.vision_transformer import ViTBody
from converter.registry import Family


class ViTRules(VisionRules):
    """ViT's keys, and its pooler's width and activation."""

    def read_extra(self, r):
        return {
            "pooler_output_size": r.int("pooler_output_size", default=r.int("hidden_size")),
            "pooler_act": r.str("pooler_act", default="tanh"),
        }


class ViTImageModel(VisionEncoderModel):
    body_cls = ViTBody
    body_name = "vit"

    def uses_pooler(self, task, tensors):
        return task == "image-feature-extraction" and self.has(tensors, "pooler.dense.weight")

    def classify(self, op, features):
        return self.classifier(op, first_token(op, features.hidden))


def vit_unused(prefix: str) -> tuple[str, ...]:
    """What a ViT-layout checkpoint may carry that no converted head reads: the masked-image-
    modeling mask token and decoder, and a pooler the head does not use."""
    return (
        rf"({prefix}\.)?embeddings\.mask_token",
        r"decoder\..*",
        rf"({prefix}\.)?pooler\..*",
    )


FAMILIES = [
    Family(
        "vit",
        ViTImageModel,
        "patch Conv, cls token, learned positions, pre-norm layers",
        ("google/vit-base-patch16-224", "google/vit-base-patch16-224-in21k"),
        rules=ViTRules(),
        task="image-feature-extraction",
        category="vision",
        unused=vit_unused("vit"),
        prefix="vit.",
    ),
    Family(
        "vit_msn",
        ViTImageModel,
        "ViT trained by masked siamese networks (no pooler)",
        ("facebook/vit-msn-small",),
        rules=ViTRules(),
        task="image-feature-extraction",
        category="vision",
        unused=vit_unused("vit"),
        prefix="vit.",
    ),
]

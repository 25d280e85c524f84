"""ViT-MSN: ViT pretrained by masked siamese networks; the ViT layout without a pooler
(converter/models/vit.py), its classifier reading the cls token."""

from __future__ import annotations

from converter.models.vit import ViTImageModel, ViTRules, vit_unused
from converter.registry import Family


class ViTMSNImageModel(ViTImageModel):
    def uses_pooler(self, task, tensors):
        return False  # ViTMSNModel has none


FAMILIES = [
    Family(
        "vit_msn",
        ViTMSNImageModel,
        "ViT without a pooler (masked siamese pretraining)",
        ("facebook/vit-msn-small",),
        rules=ViTRules(),
        task="image-feature-extraction",
        category="vision",
        unused=vit_unused("vit"),
        prefix="vit.",
    ),
]

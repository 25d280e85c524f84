"""DeiT: ViT with a distillation token after the cls token; the teacher-distilled classifier
(DeiTForImageClassificationWithTeacher) averages a head on each of the two tokens."""

from __future__ import annotations

from converter.components import Linear
from converter.models.vision import first_token
from converter.models.vision_transformer import ViTBody, ViTEmbeddings
from converter.models.vit import ViTImageModel, ViTRules, vit_unused
from converter.registry import Family


class DeiTEmbeddings(ViTEmbeddings):
    leading = ("cls_token", "distillation_token")


class DeiTBody(ViTBody):
    embeddings_cls = DeiTEmbeddings


class DeiTImageModel(ViTImageModel):
    body_cls = DeiTBody
    body_name = "deit"

    def make_classifier(self, cfg, dtype, tensors):
        self.teacher = "cls_classifier.weight" in tensors
        if not self.teacher:
            super().make_classifier(cfg, dtype, tensors)
            return
        self.cls_classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        self.distillation_classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features):
        if not self.teacher:
            return super().classify(op, features)
        hidden = features.hidden
        second = op.Squeeze(op.Slice(hidden, [1], [2], [1]), [1])
        cls = self.cls_classifier(op, first_token(op, hidden))
        distilled = self.distillation_classifier(op, second)
        return op.Div(op.Add(cls, distilled), 2.0)


FAMILIES = [
    Family(
        "deit",
        DeiTImageModel,
        "ViT with a distillation token; the teacher-distilled head averages two classifiers",
        ("facebook/deit-base-distilled-patch16-224", "facebook/deit-small-patch16-224"),
        rules=ViTRules(),
        task="image-feature-extraction",
        category="vision",
        unused=vit_unused("deit"),
        prefix="deit.",
    ),
]

"""Chinese-CLIP and AltCLIP: CLIP's vision tower beside a BERT-layout text encoder
(converter/models/encoder.py) pooled at its first token. Chinese-CLIP's is a BERT (token types
read as type 0, as its processor gives none to the model); AltCLIP's an XLM-R (`roberta`) whose
states pass `pre_LN` and `transformation` into its own width before they are pooled."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.two_tower import TwoTowerRules
from converter.models.clip import CLIP_UNUSED, ClipModel
from converter.models.encoder import BertBody
from converter.registry import Family
from converter.tasks.zero_shot import ZERO_SHOT


def first_token(op, hidden):
    return op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])


class BertTextTower(BertBody):
    """BertModel without its pooler; the two-tower model pools the first token's state."""

    def __init__(self, cfg: EncoderConfig, dtype, ep):
        super().__init__(cfg, dtype, ep, pooled=False)
        self.width = cfg.hidden_size

    def forward(self, op, text):
        hidden, _ = super().forward(op, text)
        return hidden, first_token(op, hidden)


class AltClipTextModel(nn.Module):
    """`roberta` (no pooler), then pre_LN and `transformation` to project_dim: its states and,
    pooled, their first token."""

    def __init__(self, cfg: EncoderConfig, dtype, ep):
        super().__init__()
        self.roberta = BertBody(cfg, dtype, ep, pooled=False)
        self.pre_LN = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.width = cfg.extra["project_dim"]
        self.transformation = Linear(cfg.hidden_size, self.width, True, dtype)

    def forward(self, op, text):
        hidden, _ = self.roberta(op, text)
        states = self.transformation(op, self.pre_LN(op, hidden))
        return states, first_token(op, states)


class AltClipTextRules(EncoderRules):
    def read_extra(self, r) -> dict:
        return {"project_dim": r.int("project_dim")}


class ChineseClipModel(ClipModel):
    text_cls = BertTextTower
    heads = (ZERO_SHOT,)


class AltClipModel(ClipModel):
    text_cls = AltClipTextModel
    heads = (ZERO_SHOT,)

    def make_vision(self, cfg, dtype, ep, tensors, pooled):
        # transformers 5 renames every `layers.` to BERT's `layer.` when it saves AltCLIP; the
        # Hub's checkpoints keep the vision tower's `layers.`
        saved_by_5 = "vision_model.encoder.layer.0.layer_norm1.weight" in tensors
        name = "layer" if saved_by_5 else "layers"
        return self.vision_cls(cfg.vision, dtype, ep, name, pooled=pooled)


def _text_buffers(prefix: str) -> tuple[str, ...]:
    """Buffers older checkpoints carry, and a pooler the model never runs."""
    return (
        rf"{prefix}\.embeddings\.(position_ids|token_type_ids)",
        rf"{prefix}\.pooler\..*",
    )


FAMILIES = [
    Family(
        "chinese_clip",
        ChineseClipModel,
        "CLIP's vision tower beside a BERT text encoder pooled at its first token",
        ("OFA-Sys/chinese-clip-vit-base-patch16",),
        rules=TwoTowerRules(
            "chinese_clip_text_model",
            "chinese_clip_vision_model",
            text_rules=EncoderRules(token_type_input=False),
        ),
        task="zero-shot-image-classification",
        category="multimodal",
        unused=(*CLIP_UNUSED, *_text_buffers("text_model")),
    ),
    Family(
        "altclip",
        AltClipModel,
        "CLIP's vision tower beside an XLM-R text encoder projected (pre_LN, transformation) and "
        "pooled at its first token",
        ("BAAI/AltCLIP",),
        rules=TwoTowerRules(
            "altclip_text_model",
            "altclip_vision_model",
            text_rules=AltClipTextRules(roberta_positions=True, token_type_input=False),
        ),
        task="zero-shot-image-classification",
        category="multimodal",
        unused=(*CLIP_UNUSED, *_text_buffers("text_model.roberta")),
    ),
]

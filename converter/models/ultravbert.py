"""UltraVBERT: UltraBERT (ultrabert.py) reading images as well as text. A SigLIP vision tower
(siglip.py, no pooling head) encodes each image of pixel_values [batch, num_images, 3, S, S]
(images whose pixels are all zero pad a row's list and are dropped, the first kept when every
one is); the connector pixel-shuffles its patches (each factor x factor block into one token),
projects them to the text width and RMS-normalizes them; those tokens replace, in order, the
embeddings of the image tokens in input_ids. Every pixel is encoded: transformers computes the
patch mask from pixel_attention_mask, but its SigLIP tower does not read it, so the graph takes
no such input. Heads: `projection_head` (UltraBERT's two tanh-GELU linears) and `lm_head` (tied
to the token table under the top-level tie_word_embeddings), a `classifier` over the first token
(cls) or the mean of the unpadded ones (mean), and `classifier` per token."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, RMSNorm
from converter.components.pixel_shuffle import pixel_shuffle
from converter.config.encoder import _num_labels
from converter.config.reader import ConfigReader
from converter.config.two_tower import TwoTowerRules, VisionTower, _read_section
from converter.errors import ConfigError
from converter.models.encoder import BertEncoderModel
from converter.models.eurobert import pool
from converter.models.idefics3 import real_tiles
from converter.models.siglip import SiglipVisionTransformer
from converter.models.ultrabert import (
    PredictionHead,
    UltrabertBody,
    UltrabertConfig,
    UltrabertRules,
)
from converter.models.vision_language import merge_image_features
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs
from converter.tasks.zero_shot import ImageInputs

IMAGES = "num_images"


@dataclass(frozen=True)
class UltraVBertConfig:
    model_type: str
    text: UltrabertConfig
    vision: VisionTower
    image_token_id: int
    pixel_shuffle_factor: int
    classifier_pooling: str  # cls or mean
    tie_word_embeddings: bool
    num_labels: int
    token_type_input: bool = False

    @property
    def vocab_size(self) -> int:
        return self.text.vocab_size


class UltraVBertConnector(nn.Module):
    normed = True  # RMSNorm after the projection (ModernVBERT's connector has none)

    def __init__(self, cfg: UltraVBertConfig, dtype: ir.DataType):
        super().__init__()
        vision, factor = cfg.vision, cfg.pixel_shuffle_factor
        self.side, self.factor = vision.image_size // vision.patch_size, factor
        width = vision.hidden_size * factor**2
        self.modality_projection = Linear(width, cfg.text.hidden_size, False, dtype)
        self.norm = RMSNorm(cfg.text.hidden_size, cfg.text.norm_eps, dtype) if self.normed else None
        self.width = width

    def forward(self, op, hidden):
        """[images, side², vision width] -> [images * (side / factor)², text width]."""
        tokens = op.Reshape(pixel_shuffle(op, hidden, self.side, self.factor), [-1, self.width])
        projected = self.modality_projection(op, tokens)
        return projected if self.norm is None else self.norm(op, projected)


class UltraVBertTextModel(UltrabertBody):
    """UltraBERT's body over token embeddings whose image tokens hold the image features."""

    def forward(self, op, inputs: TextInputs, features):
        ids = inputs.input_ids
        embeds = self.embed_tokens(op, ids)
        x = merge_image_features(op, embeds, ids, features, self.image_token_id)
        return self.encode(op, inputs, x)


class UltraVBertBody(nn.Module):
    """`vision_model`, `connector`, `text_model` (transformers' UltraVBertModel)."""

    connector_cls, text_cls = UltraVBertConnector, UltraVBertTextModel

    def __init__(self, cfg: UltraVBertConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.vision_model = SiglipVisionTransformer(cfg.vision, dtype, ep, pooled=False)
        self.connector = self.connector_cls(cfg, dtype)
        self.text_model = self.text_cls(cfg.text, dtype, ep, pooled)
        self.text_model.image_token_id = cfg.image_token_id
        self.vision, self.dtype = cfg.vision, dtype

    def forward(self, op, inputs: TextInputs):
        side = self.vision.image_size
        images = op.Reshape(
            inputs.extra["pixel_values"], [-1, self.vision.num_channels, side, side]
        )
        images = op.Compress(images, real_tiles(op, images, keep_a_blank=True), axis=0)
        hidden, _ = self.vision_model(op, ImageInputs(images))
        return self.text_model(op, inputs, self.connector(op, hidden))


class UltraVBertModel(BertEncoderModel):
    body_cls = UltraVBertBody
    body_name = "model"
    heads = ("feature-extraction", "fill-mask", "text-classification", "token-classification")

    def __init__(self, cfg: UltraVBertConfig, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__(cfg, dtype, ep, task, tensors)
        vision = cfg.vision
        pixels = [BATCH, IMAGES, vision.num_channels, vision.image_size, vision.image_size]
        self.extra_inputs = {"pixel_values": (dtype, pixels)}

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg: UltraVBertConfig, dtype, task: str, tensors) -> None:
        size = cfg.text.hidden_size
        if task == "fill-mask":
            self.projection_head = PredictionHead(cfg.text, dtype)
            tied = cfg.tie_word_embeddings
            self.lm_head = None if tied else Linear(size, cfg.vocab_size, False, dtype, head=True)
        elif task != "feature-extraction":
            self.classifier = Linear(size, cfg.num_labels, True, dtype)

    def word_table(self):
        return self.body.text_model.embed_tokens.weight

    def mlm_logits(self, op, x):
        if self.lm_head is None:
            return op.MatMul(x, op.Transpose(self.word_table(), perm=[1, 0]))
        return self.lm_head(op, x)

    def classify(self, op, x):
        return self.classifier(op, x)

    def forward(self, op, inputs: TextInputs) -> dict:
        hidden, _ = self.body(op, inputs)
        cfg, tokens, task = self.cfg, [BATCH, SEQUENCE], self.task
        if task == "feature-extraction":
            return {"last_hidden_state": (hidden, [*tokens, cfg.text.hidden_size])}
        if task == "fill-mask":
            logits = self.mlm_logits(op, self.projection_head(op, hidden))
            return {"logits": (logits, [*tokens, cfg.vocab_size])}
        if task == "token-classification":
            return {"logits": (self.classify(op, hidden), [*tokens, cfg.num_labels])}
        how, dtype = cfg.classifier_pooling, self.body.dtype
        pooled = pool(op, hidden, inputs.attention_mask, how, dtype)
        return {"logits": (self.classify(op, pooled), [BATCH, cfg.num_labels])}


class UltraVBertRules(TwoTowerRules):
    poolings = ("cls", "mean")

    def __init__(self, text_type: str = "ultrabert", text_rules=None) -> None:
        text_rules = text_rules or UltrabertRules()
        super().__init__(text_type, "siglip_vision_model", text_rules=text_rules)

    def read(self, r: ConfigReader) -> UltraVBertConfig:
        text = _read_section(r, "text", self.text_type, self.read_text)
        vision = _read_section(r, "vision", self.vision_type, self.read_vision)
        factor = r.int("pixel_shuffle_factor", hi=64)
        side = vision.image_size // vision.patch_size
        if side % factor:
            raise ConfigError(
                f"'pixel_shuffle_factor' = {factor} does not divide the tower's {side} patches a "
                f"side (vision_config image_size {vision.image_size} / patch_size "
                f"{vision.patch_size})"
            )
        pooling = r.str("classifier_pooling")
        if pooling not in self.poolings:
            r.refuse("classifier_pooling", f"pooling is one of {', '.join(self.poolings)}")
        return UltraVBertConfig(
            model_type=r.model_type,
            text=text,
            vision=vision,
            image_token_id=r.int("image_token_id", lo=0, hi=text.vocab_size - 1),
            pixel_shuffle_factor=factor,
            classifier_pooling=pooling,
            tie_word_embeddings=r.bool("tie_word_embeddings", False),
            num_labels=_num_labels(r),
        )


FAMILIES = [
    Family(
        "ultravbert",
        UltraVBertModel,
        "UltraBERT reading images too: a SigLIP tower, a pixel-shuffle connector and RMSNorm "
        "into the image tokens' embeddings (input_ids, attention_mask, pixel_values)",
        ("athrael-soju/UltraVBERT",),
        rules=UltraVBertRules(),
        task="feature-extraction",
        category="encoder",
        prefix="model.",
        unused=(r"(model\.)?vision_model\.head\..*",),  # SigLIP's pooling head, never run
        # the Hub layout transformers saves and renames when loading
        renames=((r"^head\.decoder\.", "lm_head."), (r"^head\.", "projection_head.")),
    ),
]

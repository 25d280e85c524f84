"""Aya Vision: a SigLIP vision tower's hidden states at `vision_feature_layer`, pixel-shuffled
(each `downsample_factor`² block of patches one token), through a SwiGLU projector (LayerNorm,
linear_1, silu(second half) x first half, linear_2) in place of the image tokens of Cohere 2.
Command A Vision (cohere2_vision) is the same layout over the tower's output after
post_layernorm, without the projector's LayerNorm. Their processors cut each image into
fixed-size tiles (plus a thumbnail): the vision graph reads pixel_values [num_tiles, 3,
image_size, image_size], every tile's tokens in order. The head is the VLM's own lm_head, which
transformers never scales by the text model's logit_scale."""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.components.pixel_shuffle import pixel_shuffle
from converter.config.architecture import ArchitectureConfig
from converter.config.reader import ConfigReader
from converter.config.two_tower import TwoTowerRules, VisionTower
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.models.llava import LLAVA_RENAMES, one_feature_layer
from converter.models.siglip import SiglipVisionEmbeddings
from converter.models.tower import TowerEncoder, skip_norms
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class SiglipShuffleRules(VisionLanguageRules):
    """A SigLIP tower pixel-shuffled into a SwiGLU projector over Cohere 2: Aya Vision's
    settings (Command A Vision's: Cohere2VisionRules)."""

    text_type = "cohere2"
    vision_type = "siglip_vision_model"
    tie_from_text = False

    def read_text(self, raw: dict, text_type: str) -> ArchitectureConfig:
        return replace(super().read_text(raw, text_type), logits_multiplier=1.0)

    def read_vision(self, r: ConfigReader) -> VisionTower:
        tower = r.raw.get("model_type", self.vision_type)
        if tower != self.vision_type:
            raise ConfigError(
                f"'model_type' = {tower!r}: the vision tower converts as {self.vision_type} only"
            )
        return TwoTowerRules("siglip_text_model", self.vision_type).read_vision(r)

    def read_extra(self, r: ConfigReader, text, vision: VisionTower) -> dict:
        factor = r.int("downsample_factor", hi=64)
        side = vision.image_size // vision.patch_size
        if side % factor:
            raise ConfigError(
                f"'downsample_factor' = {factor} does not divide the tower's {side} x {side} "
                "patch grid"
            )
        inner = r.int("alignment_intermediate_size", default=text.hidden_size)
        if inner % 2:
            raise ConfigError(
                f"'alignment_intermediate_size' = {inner} must be even (SwiGLU halves it)"
            )
        return {"factor": factor, "side": side, "inner": inner, **self.read_features(r, vision)}

    def read_features(self, r: ConfigReader, vision: VisionTower) -> dict:
        """Which hidden state feeds the projector, and the projector's LayerNorm."""
        layer = one_feature_layer(r, vision.num_hidden_layers)
        if r.str("vision_feature_select_strategy") != "full":
            r.refuse(
                "vision_feature_select_strategy",
                "SigLIP has no class token; dropping the first patch leaves no square grid",
            )
        norm_eps = r.float("adapter_layer_norm_eps")
        return {"layer": layer, "post_norm": False, "norm_eps": norm_eps}


class Cohere2VisionRules(SiglipShuffleRules):
    """Command A Vision: no feature-layer settings, no projector LayerNorm."""

    def read_features(self, r: ConfigReader, vision: VisionTower) -> dict:
        # the tower's output (after post_layernorm) straight into linear_1
        return {"layer": vision.num_hidden_layers, "post_norm": True, "norm_eps": None}


class SwigluProjector(nn.Module):
    """linear_2(silu(gate) * x) where linear_1's output is x, then gate; an optional LayerNorm
    first."""

    def __init__(
        self, width: int, inner: int, hidden: int, norm_eps: float | None, dtype: ir.DataType
    ):
        super().__init__()
        self.layernorm = None if norm_eps is None else LayerNorm(width, norm_eps, dtype)
        self.linear_1 = Linear(width, inner, True, dtype)
        self.linear_2 = Linear(inner // 2, hidden, True, dtype)

    def forward(self, op, x):
        if self.layernorm is not None:
            x = self.layernorm(op, x)
        x, gate = op.Split(self.linear_1(op, x), axis=-1, num_outputs=2, _outputs=2)
        return self.linear_2(op, op.Mul(activation(op, "silu", gate), x))


class SiglipFeatureTower(nn.Module):
    """SigLIP's vision transformer built to the feature layer: its output, through
    post_layernorm when `post_norm`."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType, ep, post_norm: bool):
        super().__init__()
        self.embeddings = SiglipVisionEmbeddings(cfg, dtype)
        self.encoder = TowerEncoder(cfg, dtype)
        norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype) if post_norm else None
        self.post_layernorm = norm
        self.ep, self.dtype = ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # post_layernorm reads the last layer's sum
        return skip_norms(plan, 0 if self.post_layernorm is None else 1)

    def forward(self, op, image) -> ir.Value:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        x = self.encoder(op, self.embeddings(op, image), kernel)
        return x if self.post_layernorm is None else self.post_layernorm(op, x)


class AyaVisionModel(VisionLanguageModel):
    def make_vision(self, cfg, dtype, ep) -> None:
        extra = cfg.extra
        tower = replace(cfg.vision, num_hidden_layers=self.depth)
        self.vision_tower = SiglipFeatureTower(tower, dtype, ep, post_norm=self.post_norm)
        width = cfg.vision.hidden_size * extra["factor"] ** 2
        self.multi_modal_projector = SwigluProjector(
            width, extra["inner"], cfg.text.hidden_size, extra["norm_eps"], dtype
        )

    @property
    def depth(self) -> int:
        return self.cfg.extra["layer"]

    @property
    def post_norm(self) -> bool:
        return self.cfg.extra["post_norm"]

    def unused_tensors(self) -> tuple[str, ...]:
        unused = () if self.post_norm else (r"vision_tower\.post_layernorm\.(weight|bias)",)
        return (
            *super().unused_tensors(),
            *unused,
            r"vision_tower\.head\..+",
            *(
                rf"vision_tower\.encoder\.layers\.{i}\..+"
                for i in range(self.depth, self.cfg.vision.num_hidden_layers)
            ),
        )

    def image_features(self, op, image) -> ir.Value:
        x = self.vision_tower(op, image)
        x = pixel_shuffle(op, x, self.cfg.extra["side"], self.cfg.extra["factor"])
        features = self.multi_modal_projector(op, x)
        return op.Reshape(features, [-1, self.cfg.text.hidden_size])


FAMILIES = [
    Family(
        "aya_vision",
        AyaVisionModel,
        "a SigLIP tower's hidden states pixel-shuffled through a SwiGLU projector in place of "
        "the image tokens of Cohere 2 (vision.onnx over fixed-size tiles, embedding.onnx, "
        "model.onnx; onnxruntime runs it, onnxruntime-genai has no Aya Vision type)",
        ("CohereLabs/aya-vision-8b",),
        rules=SiglipShuffleRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_RENAMES,
    ),
    Family(
        "cohere2_vision",
        AyaVisionModel,
        "Aya Vision's layout reading the SigLIP tower's output (after post_layernorm), its "
        "SwiGLU projector without a LayerNorm (onnxruntime runs it, onnxruntime-genai has no "
        "Command A Vision type)",
        ("CohereLabs/command-a-vision-07-2025",),
        rules=Cohere2VisionRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_RENAMES,
    ),
]

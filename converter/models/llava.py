"""LLaVA: a CLIP vision tower whose hidden states at `vision_feature_layer` (one layer, or
several concatenated), without the class token under the "default" strategy, go through a
two-layer projector (linear_1, the activation, linear_2) into any registered text decoder
(Llama for LLaVA 1.5). The vision graph takes fixed-size images: pixel_values [num_images, 3,
image_size, image_size]."""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.reader import ConfigReader
from converter.config.two_tower import TwoTowerRules, VisionTower
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.models.clip import ClipVisionTransformer
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

STRATEGIES = ("default", "full")  # drop the class token, or keep it


class LlavaRules(VisionLanguageRules):
    text_type = "llama"
    vision_type = "clip_vision_model"

    def read_vision(self, r: ConfigReader) -> VisionTower:
        return read_tower(r, "LLaVA", "clip_text_model", self.vision_type)

    def read_extra(self, r: ConfigReader, text, vision: VisionTower) -> dict:
        strategy = r.str("vision_feature_select_strategy")
        if strategy not in STRATEGIES:
            raise ConfigError(
                f"'vision_feature_select_strategy' = {strategy!r} is not one of "
                f"{', '.join(STRATEGIES)}"
            )
        return {
            # hidden states index: 0 is the embeddings (after pre_layrnorm), i the i-th layer's
            "feature_layers": feature_layers(r, vision.num_hidden_layers),
            "drop_class_token": strategy == "default",
            "projector_act": r.str("projector_hidden_act"),
            "projector_bias": r.bool("multimodal_projector_bias", True),
        }


def read_tower(r: ConfigReader, family: str, text_type: str, vision_type: str) -> VisionTower:
    """`vision_config` as the vision tower of the two-tower pair (`text_type`, `vision_type`),
    the only tower `family` converts with."""
    tower = r.raw.get("model_type", vision_type)
    if tower != vision_type:
        raise ConfigError(
            f"'model_type' = {tower!r}: {family}'s vision tower converts as {vision_type} only"
        )
    return TwoTowerRules(text_type, vision_type).read_vision(r)


def feature_layers(
    r: ConfigReader, depth: int, keys: tuple[str, ...] = ("vision_feature_layer",)
) -> tuple[int, ...]:
    """The hidden states `keys` name (one layer, or several concatenated) as indices: 0 is the
    embeddings (after pre_layrnorm), i the i-th layer's output, `depth` the last's."""
    layers = r.get(*keys)
    chosen = layers if isinstance(layers, list) else [layers]
    for layer in chosen:
        valid = isinstance(layer, int) and not isinstance(layer, bool)
        if not valid or not -depth - 1 <= layer <= depth:
            raise ConfigError(
                f"'{keys[0]}' = {layers!r} must name hidden states of the {depth}-layer tower "
                f"(0..{depth}, or negative from the end)"
            )
    return tuple(layer % (depth + 1) for layer in chosen)


def one_feature_layer(r: ConfigReader, depth: int) -> int:
    """The one hidden state `vision_feature_layer` names (a pixel shuffle reads one)."""
    layers = feature_layers(r, depth)
    if len(layers) != 1:
        r.refuse("vision_feature_layer", "the pixel shuffle reads one layer's hidden states")
    return layers[0]


class LlavaProjector(nn.Module):
    """linear_1, the activation, linear_2 (`names`: what a family's checkpoints call the two)."""

    names = ("linear_1", "linear_2")

    def __init__(self, width: int, hidden: int, act: str, bias: bool, dtype: ir.DataType):
        super().__init__()
        first, second = self.names
        setattr(self, first, Linear(width, hidden, bias, dtype))
        setattr(self, second, Linear(hidden, hidden, bias, dtype))
        self.act = act

    def forward(self, op, x):
        first, second = (getattr(self, name) for name in self.names)
        return second(op, activation(op, self.act, first(op, x)))


class LlavaVisionTower(ClipVisionTransformer):
    """CLIP's vision transformer run to the deepest feature layer, returning every hidden
    state (the embeddings after pre_layrnorm, then each layer's output)."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep, pooled=False)

    def forward(self, op, pixels) -> list[ir.Value]:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        x = self.pre_layrnorm(op, self.embeddings(op, pixels))
        states = [x]
        self.encoder(op, x, kernel, states)
        return states


class LlavaModel(VisionLanguageModel):
    tower_cls = LlavaVisionTower
    # the tower's tensors past the chosen hidden states
    tower_unused = (r"vision_tower\.post_layernorm\.(weight|bias)",)

    def make_vision(self, cfg, dtype, ep) -> None:
        extra = cfg.extra
        self.depth = max(extra["feature_layers"])
        tower = replace(cfg.vision, num_hidden_layers=self.depth)
        self.vision_tower = self.tower_cls(tower, dtype, ep)
        width = cfg.vision.hidden_size * len(extra["feature_layers"])
        self.multi_modal_projector = self.make_projector(cfg, width, dtype)

    def make_projector(self, cfg, width: int, dtype: ir.DataType) -> nn.Module:
        extra = cfg.extra
        return LlavaProjector(
            width, cfg.text.hidden_size, extra["projector_act"], extra["projector_bias"], dtype
        )

    def unused_tensors(self) -> tuple[str, ...]:
        depth = max(self.cfg.extra["feature_layers"])
        total = self.cfg.vision.num_hidden_layers
        return (
            *super().unused_tensors(),
            *self.tower_unused,
            *(rf"vision_tower\.encoder\.layers\.{i}\..+" for i in range(depth, total)),
        )

    def image_features(self, op, image) -> ir.Value:
        features = self.crop_features(op, image.pixel_values)
        return op.Reshape(features, [-1, self.cfg.text.hidden_size])

    def crop_features(self, op, pixels) -> ir.Value:
        """[images, tokens, text hidden]: the projected features of fixed-size images."""
        states = self.vision_tower(op, pixels)
        chosen = [states[i] for i in self.cfg.extra["feature_layers"]]
        if self.cfg.extra["drop_class_token"]:
            chosen = [op.Slice(s, [1], [(1 << 63) - 1], [1]) for s in chosen]
        x = chosen[0] if len(chosen) == 1 else op.Concat(*chosen, axis=-1)
        return self.multi_modal_projector(op, x)


# checkpoints written by transformers 4 and 5's save_pretrained keep `language_model.model.`,
# `language_model.lm_head.`, `vision_tower.vision_model.` (4) or `vision_tower.` (5), and
# `multi_modal_projector.`; transformers 5's module names put them under `model.`
LLAVA_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^lm_head\.", "language_model.lm_head."),
    (r"^model\.vision_tower\.", "vision_tower."),
    (r"^model\.multi_modal_projector\.", "multi_modal_projector."),
    (r"^vision_tower\.vision_model\.", "vision_tower."),
)

FAMILIES = [
    Family(
        "llava",
        LlavaModel,
        "a CLIP vision tower's chosen hidden states through a two-layer projector in place of "
        "the image tokens of a registered text decoder (vision.onnx, embedding.onnx, "
        "model.onnx; onnxruntime runs it, onnxruntime-genai has no LLaVA type)",
        ("llava-hf/llava-1.5-7b-hf",),
        rules=LlavaRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_RENAMES,
    ),
]

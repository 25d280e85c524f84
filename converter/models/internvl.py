"""InternVL (transformers' `internvl`, the -hf checkpoints): InternViT, a ViT with a class token,
learned positions, per-channel layer scales (`lambda_1`, `lambda_2`), LayerNorm or RMSNorm
layers and optional q/k RMSNorms over the whole width; its patch states at
`vision_feature_layer` (the class token dropped) pixel-shuffled (each 1 / `downsample_ratio`
square block of patches one token) through an MLP projector (layer_norm, linear_1, the
activation, linear_2) in place of the image tokens of Qwen2 (or the text model config.json
names). The processor cuts each image into fixed-size tiles (plus a thumbnail): the vision
graph reads pixel_values [num_tiles, 3, image_size, image_size]."""

from __future__ import annotations

from dataclasses import dataclass, replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, RMSNorm
from converter.components.encoder_attention import encoder_attention
from converter.components.pixel_shuffle import pixel_shuffle
from converter.config.reader import MAX_DIM, MAX_LAYERS, ConfigReader
from converter.config.vision import MAX_IMAGE_SIDE, pair
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.llava import LLAVA_RENAMES, LlavaProjector, one_feature_layer
from converter.models.tower import TowerMlp
from converter.models.vision_language import VisionLanguageModel
from converter.models.vision_transformer import ViTEmbeddings
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

QK_NORM_EPS = 1e-6  # transformers builds the q/k RMSNorms with their default epsilon
PROJECTOR_NORM_EPS = 1e-5  # and the projector's LayerNorm with torch's


@dataclass(frozen=True)
class InternVisionConfig:
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    norm_eps: float
    activation: str
    num_channels: int
    image_size: int  # square tiles
    patch_size: int
    attention_bias: bool
    qk_norm: bool
    rms_norm: bool  # the layers' norms: RMSNorm, else LayerNorm
    absolute_positions: bool
    final_norm: bool  # `layernorm` after the stack (when not use_mean_pooling)

    @property
    def grid(self) -> tuple[int, int]:
        side = self.image_size // self.patch_size
        return side, side


class InternVLRules(VisionLanguageRules):
    text_type = "qwen2"
    vision_type = "internvl_vision"
    tie_from_text = False

    def read_vision(self, r: ConfigReader) -> InternVisionConfig:
        image, patch = pair(r, "image_size", MAX_IMAGE_SIDE), pair(r, "patch_size", MAX_IMAGE_SIDE)
        if image[0] != image[1] or patch[0] != patch[1]:
            r.refuse("image_size", "the pixel shuffle reads a square grid of square patches")
        if image[0] % patch[0]:
            raise ConfigError(f"'image_size' = {image[0]} is not a multiple of 'patch_size'")
        hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        norm = r.str("norm_type")
        if norm not in ("layer_norm", "rms_norm"):
            r.refuse("norm_type", "one of layer_norm, rms_norm")
        return InternVisionConfig(
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            norm_eps=r.float("layer_norm_eps"),
            activation=r.str("hidden_act"),
            num_channels=r.int("num_channels", default=3, hi=64),
            image_size=image[0],
            patch_size=patch[0],
            attention_bias=r.bool("attention_bias", False),
            qk_norm=r.bool("use_qk_norm", False),
            rms_norm=norm == "rms_norm",
            absolute_positions=r.bool("use_absolute_position_embeddings", True),
            final_norm=not r.bool("use_mean_pooling", True),
        )

    def read_extra(self, r: ConfigReader, text, vision: InternVisionConfig) -> dict:
        ratio = r.float("downsample_ratio")
        factor = round(1 / ratio)
        if factor < 1 or factor * ratio != 1:
            r.refuse("downsample_ratio", "the pixel shuffle takes 1 / an integer")
        side = vision.grid[0]
        if side % factor:
            raise ConfigError(
                f"'downsample_ratio' = {ratio} does not divide the tower's {side} x {side} "
                "patch grid"
            )
        layer = one_feature_layer(r, vision.num_hidden_layers)
        if r.str("vision_feature_select_strategy") != "default":
            r.refuse(
                "vision_feature_select_strategy",
                "keeping the class token leaves no square grid to pixel-shuffle",
            )
        return {
            "factor": factor,
            "side": side,
            "layer": layer,
            # -1 reads the tower's output (through `layernorm`, if it has one); any other index
            # the hidden state as the layer left it
            "final_norm": r.get("vision_feature_layer") == -1 and vision.final_norm,
            "projector_act": r.str("projector_hidden_act"),
        }


def make_norm(cfg: InternVisionConfig, dtype: ir.DataType) -> RMSNorm | LayerNorm:
    if cfg.rms_norm:
        return RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
    return LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)


class InternEmbeddings(ViTEmbeddings):
    """`cls_token`, then `patch_embeddings.projection`, plus `position_embeddings` (if any)."""

    def has_positions(self, cfg: InternVisionConfig) -> bool:
        return cfg.absolute_positions


class InternAttention(nn.Module):
    """q/k/v projections (RMSNorm over the whole width of q and k, if any), the EP's attention
    kernel, `projection_layer`."""

    def __init__(self, cfg: InternVisionConfig, dtype: ir.DataType):
        super().__init__()
        size, bias = cfg.hidden_size, cfg.attention_bias
        self.q_proj = Linear(size, size, bias, dtype)
        self.k_proj = Linear(size, size, bias, dtype)
        self.v_proj = Linear(size, size, bias, dtype)
        self.projection_layer = Linear(size, size, True, dtype)
        qk_norm = cfg.qk_norm
        self.q_norm = RMSNorm(size, QK_NORM_EPS, dtype) if qk_norm else None
        self.k_norm = RMSNorm(size, QK_NORM_EPS, dtype) if qk_norm else None
        self.heads = cfg.num_attention_heads
        self.scale = (size // self.heads) ** -0.5

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, kernel):
        q, k, v = self.q_proj(op, x), self.k_proj(op, x), self.v_proj(op, x)
        if self.q_norm is not None:
            q, k = self.q_norm(op, q), self.k_norm(op, k)
        return self.projection_layer(op, kernel(op, q, k, v, self.heads, self.scale))


class InternLayer(nn.Module):
    """x + lambda_1 * attention(layernorm_before(x)), then
    x + lambda_2 * mlp(layernorm_after(x))."""

    def __init__(self, cfg: InternVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = InternAttention(cfg, dtype)
        self.mlp = TowerMlp(cfg, dtype)
        self.layernorm_before = make_norm(cfg, dtype)
        self.layernorm_after = make_norm(cfg, dtype)
        self.lambda_1 = nn.Parameter([cfg.hidden_size], dtype)
        self.lambda_2 = nn.Parameter([cfg.hidden_size], dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # layernorm_after reads the attention's sum, the next norm the MLP's
        return {"skip_norms": 2 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, kernel):
        attended = self.attention(op, self.layernorm_before(op, x), kernel)
        x = op.Add(x, op.Mul(self.lambda_1, attended))
        return op.Add(x, op.Mul(self.lambda_2, self.mlp(op, self.layernorm_after(op, x))))


class InternEncoder(nn.Module):
    def __init__(self, cfg: InternVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.layer = nn.ModuleList([InternLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)])

    def forward(self, op, x, kernel):
        for layer in self.layer:
            x = layer(op, x, kernel)
        return x


class InternVisionTower(nn.Module):
    """The embeddings and the layers up to the feature layer, then `layernorm` when the
    features are the tower's normed output."""

    def __init__(self, cfg: InternVisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.embeddings = InternEmbeddings(cfg, dtype)
        self.encoder = InternEncoder(cfg, dtype)
        self.layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype) if cfg.final_norm else None
        self.ep, self.dtype = ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # the first layer's layernorm_before reads the embeddings (no sum of two activations);
        # the last layer's sum feeds `layernorm`, or nothing
        fused = (self.layernorm is not None) - 1
        return {"skip_norms": fused if plan.has(SKIP_NORM) else 0}

    def forward(self, op, pixels):
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        x = self.encoder(op, self.embeddings(op, pixels), kernel)
        return x if self.layernorm is None else self.layernorm(op, x)


class InternVLProjector(LlavaProjector):
    """LLaVA's two layers after a LayerNorm."""

    def __init__(self, width: int, hidden: int, act: str, dtype: ir.DataType):
        super().__init__(width, hidden, act, True, dtype)
        self.layer_norm = LayerNorm(width, PROJECTOR_NORM_EPS, dtype)

    def forward(self, op, x):
        return super().forward(op, self.layer_norm(op, x))


class InternVLModel(VisionLanguageModel):
    def make_vision(self, cfg, dtype, ep) -> None:
        extra = cfg.extra
        tower = replace(
            cfg.vision, num_hidden_layers=extra["layer"], final_norm=extra["final_norm"]
        )
        self.vision_tower = InternVisionTower(tower, dtype, ep)
        width = cfg.vision.hidden_size * extra["factor"] ** 2
        self.multi_modal_projector = InternVLProjector(
            width, cfg.text.hidden_size, extra["projector_act"], dtype
        )

    def unused_tensors(self) -> tuple[str, ...]:
        extra, vision = self.cfg.extra, self.cfg.vision
        return (
            *super().unused_tensors(),
            r"vision_tower\.embeddings\.mask_token",  # masked image modelling only
            *((r"vision_tower\.layernorm\.(weight|bias)",) if not extra["final_norm"] else ()),
            *(
                rf"vision_tower\.encoder\.layer\.{i}\..+"
                for i in range(extra["layer"], vision.num_hidden_layers)
            ),
        )

    def image_features(self, op, image) -> ir.Value:
        x = self.vision_tower(op, image.pixel_values)
        x = op.Slice(x, [1], [(1 << 63) - 1], [1])  # without the class token
        x = pixel_shuffle(op, x, self.cfg.extra["side"], self.cfg.extra["factor"])
        features = self.multi_modal_projector(op, x)
        return op.Reshape(features, [-1, self.cfg.text.hidden_size])


FAMILIES = [
    Family(
        "internvl",
        InternVLModel,
        "InternViT (class token, layer scales, optional q/k norms) pixel-shuffled through an "
        "MLP projector in place of the image tokens of Qwen2 (vision.onnx over fixed-size "
        "tiles, embedding.onnx, model.onnx; onnxruntime runs it, onnxruntime-genai has no "
        "InternVL type)",
        ("OpenGVLab/InternVL3-1B-hf",),
        rules=InternVLRules(),
        task=VLM_TASK,
        category="vlm",
        renames=LLAVA_RENAMES,
    ),
]

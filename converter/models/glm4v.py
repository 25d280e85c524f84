"""GLM-4V (GLM-4.1V, GLM-4.5V, GLM-4.6V) and GLM-OCR: a vision transformer over the processor's
flattened patches into GLM-4 (or GLM-4.5's MoE) with multimodal (3-D) rope.

The vision graph reads pixel_values [num_patches, channels * temporal_patch_size * patch²] (rows
in the processor's order: per image, per frame, per merge block of spatial_merge_size² patches)
and image_grid_thw [num_images, 3], as Qwen-VL's. The 3-D patch convolution is a MatMul by its
flattened kernel, then an RMSNorm; each patch adds the learned position table (a square grid of
image_size / patch_size a side) resampled bicubically at its place in its own image's grid
(GridSample, half-pixel centres, border padding, as transformers' grid_sample). The blocks
(RMSNorms, 2-D rotary, a gated MLP) attend within each frame; after the post-layernorm each
merge block's patches go through the `downsample` convolution (a MatMul of the block) and the
merger (a linear, LayerNorm, GELU, then a gated MLP) into the text model's width.

GLM-OCR's tower has no position table nor post-conv norm, RMSNorms on each head's queries and
keys, biased output projections and an MLP of `intermediate_size`.

The decoder is the text section's family: glm4v_text (GLM-4.1V, GLM-OCR) is GLM-4's layer with
interleaved partial rotary, glm4v_moe_text GLM-4.5's MoE with rotary over halves; both take the
3-D positions' sections of the rotary frequencies (rope.mrope_section).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, RMSNorm, activation
from converter.components.encoder_attention import BlockAttention
from converter.components.experts import EitherMajor
from converter.config.reader import MAX_DIM, MAX_VOCAB, ConfigReader
from converter.config.vision import MAX_IMAGE_SIDE
from converter.config.vision_language import VisionLanguageConfig, VisionLanguageRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.glm import GlmRules
from converter.models.glm4_moe import Glm4MoeBody, Glm4MoeLayer, Glm4MoeLM, SharedExpertsMoe
from converter.models.qwen_vl import (
    PatchEmbed,
    Rotary,
    axial_rotary,
    patch_grid,
    read_patch_fields,
    rotate,
    same,
)
from converter.models.vision_language import Holder, VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

FLOAT = ir.DataType.FLOAT
MERGER_NORM_EPS = 1e-5  # the merger's LayerNorm keeps torch's default


@dataclass(frozen=True)
class GlmVisionConfig:
    depth: int
    hidden_size: int
    num_heads: int
    out_hidden_size: int  # the downsample's and merger's width: the text model's
    in_channels: int
    patch_size: int
    temporal_patch_size: int
    spatial_merge_size: int
    norm_eps: float
    activation: str
    attention_bias: bool  # the qkv projection's (GLM-OCR: also proj's and the MLP's)
    rope_theta: float
    mlp_size: int  # the blocks' MLP width
    merger_size: int  # the merger's gated MLP width
    position_side: int  # the learned position grid's side (0: none, GLM-OCR)
    ocr: bool  # GLM-OCR's tower: q/k norms, biased proj and MLP, no post-conv norm

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def patch_width(self) -> int:
        """A row of pixel_values: one patch's channels x frames x pixels."""
        return self.in_channels * self.temporal_patch_size * self.patch_size**2


# the text section's model_type -> the registered family whose decoder it is, and the traits
# transformers fixes for it (GLM-4V's attention always has q/k/v biases, GLM-OCR's none)
TEXT_FAMILIES = {
    "glm4v_text": ("glm4", GlmRules(fused_gate_up=True, o_bias=False, qkv_bias=True)),
    "glm_ocr_text": ("glm4", GlmRules(fused_gate_up=True, o_bias=False, qkv_bias=False)),
    "glm4v_moe_text": ("glm4_moe", None),  # glm4_moe's own rules
}


class Glm4vRules(VisionLanguageRules):
    """`text_types`: the text models the family reads (the first when text_config names none);
    `tie_from_text`: whether its config forwards the text section's tie (Glm4vConfig's
    __post_init__ does, GLM-4.6V's config does not)."""

    ocr = False

    def __init__(
        self,
        text_types: tuple[str, ...],
        vision_type: str = "glm4v_vision",
        tie_from_text: bool = True,
    ):
        self.text_types, self.vision_type = text_types, vision_type
        self.text_type, self.tie_from_text = text_types[0], tie_from_text

    @property
    def nested_types(self) -> tuple[str, ...]:
        return (self.vision_type, *self.text_types)

    def read(self, r: ConfigReader) -> VisionLanguageConfig:
        cfg = super().read(r)
        return replace(cfg, text_type=TEXT_FAMILIES[cfg.text_type][0])

    def read_text(self, raw, text_type: str):
        from converter.registry import family_for

        if text_type not in self.text_types:
            known = ", ".join(self.text_types)
            raise ConfigError(f"'model_type' = {text_type!r}: the text model is one of {known}")
        family, rules = TEXT_FAMILIES[text_type]
        return (rules or family_for(family).rules).read(ConfigReader(raw, text_type))

    def read_vision(self, r: ConfigReader) -> GlmVisionConfig:
        fields = read_patch_fields(r, r.int("hidden_size"))
        patch, out = fields["patch_size"], r.int("out_hidden_size")
        image = r.int("image_size", hi=MAX_IMAGE_SIDE)
        inner = r.int("intermediate_size", hi=MAX_DIM * 4)
        return GlmVisionConfig(
            **fields,
            out_hidden_size=out,
            norm_eps=r.float("rms_norm_eps"),
            attention_bias=r.bool("attention_bias", False),
            mlp_size=inner if self.ocr else out,
            merger_size=out * fields["in_channels"] if self.ocr else inner,
            position_side=0 if self.ocr else image // patch,
            ocr=self.ocr,
        )

    def read_extra(self, r: ConfigReader, text, vision: GlmVisionConfig) -> dict:
        if vision.out_hidden_size != text.hidden_size:
            raise ConfigError(
                f"vision_config: 'out_hidden_size' = {vision.out_hidden_size} differs from the "
                f"text model's 'hidden_size' = {text.hidden_size}"
            )
        if text.rope is None or not text.rope.mrope_section:
            raise ConfigError("text_config: the rope has no 'mrope_section'")
        return {
            key: r.int(key, lo=0, hi=MAX_VOCAB)
            for key in ("video_token_id", "image_start_token_id", "image_end_token_id")
        }


class GlmOcrRules(Glm4vRules):
    ocr = True


@dataclass
class PatchPlaces:
    """What the graph computes once from the grids for every block."""

    rotary: Rotary
    keep: ir.Value  # [patches, patches] bool: the same image's same frame
    grid_x: ir.Value  # [patches] float32: the patch's centre in its image, in [-1, 1]
    grid_y: ir.Value


def patch_places(op, grid, patches: ir.Value, cfg: GlmVisionConfig) -> PatchPlaces:
    places = patch_grid(op, grid, patches, cfg.spatial_merge_size)

    def centre(position, size):
        ratio = op.Div(op.Add(op.Cast(position, to=FLOAT), 0.5), op.Cast(size, to=FLOAT))
        return op.Sub(op.Mul(ratio, 2.0), 1.0)

    return PatchPlaces(
        axial_rotary(op, places, cfg.head_dim, cfg.rope_theta),
        same(op, places.image, places.frame),
        centre(places.col, places.width),
        centre(places.row, places.height),
    )


class PositionGrid(nn.Module):
    """The learned [side², hidden] table (after `leading` rows that are not the grid's) as a
    side x side image, sampled (`mode`: bicubically) at each patch's centre (in float32, as
    transformers)."""

    mode = "cubic"
    leading = 0

    def __init__(self, cfg: GlmVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([self.leading + cfg.position_side**2, cfg.hidden_size], dtype)
        self.side, self.hidden, self.dtype = cfg.position_side, cfg.hidden_size, dtype

    def forward(self, op, places: PatchPlaces):
        table = self.weight if self.dtype == FLOAT else op.Cast(self.weight, to=FLOAT)
        if self.leading:
            table = op.Slice(table, [self.leading], [self.leading + self.side**2], [0])
        image = op.Transpose(op.Reshape(table, [1, self.side, self.side, -1]), perm=[0, 3, 1, 2])
        points = op.Concat(
            op.Unsqueeze(places.grid_x, [1]), op.Unsqueeze(places.grid_y, [1]), axis=1
        )
        sampled = op.GridSample(
            image,
            op.Unsqueeze(points, [0, 2]),  # [1, patches, 1, 2]
            mode=self.mode,
            padding_mode="border",
            align_corners=0,
        )  # [1, hidden, patches, 1]
        out = op.Transpose(op.Reshape(sampled, [1, self.hidden, -1]), perm=[0, 2, 1])
        return out if self.dtype == FLOAT else op.Cast(out, to=self.dtype)


class VisionAttention(nn.Module):
    def __init__(self, cfg: GlmVisionConfig, dtype: ir.DataType):
        super().__init__()
        hidden = cfg.hidden_size
        self.qkv = Linear(hidden, 3 * hidden, cfg.attention_bias, dtype)
        self.proj = Linear(hidden, hidden, cfg.ocr and cfg.attention_bias, dtype)
        if cfg.ocr:
            self.q_norm = RMSNorm(cfg.head_dim, cfg.norm_eps, dtype)
            self.k_norm = RMSNorm(cfg.head_dim, cfg.norm_eps, dtype)
        self.heads, self.head_dim, self.dtype = cfg.num_heads, cfg.head_dim, dtype
        self.hidden, self.ocr = hidden, cfg.ocr

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, places: PatchPlaces, attention: BlockAttention):
        qkv = op.Reshape(self.qkv(op, x), [-1, 3, self.heads, self.head_dim])
        q, k, v = (
            op.Squeeze(part, [1]) for part in op.Split(qkv, num_outputs=3, axis=1, _outputs=3)
        )
        if self.ocr:
            q, k = self.q_norm(op, q), self.k_norm(op, k)
        q, k = (rotate(op, part, places.rotary, self.dtype) for part in (q, k))
        q, k, v = (op.Reshape(part, [1, -1, self.hidden]) for part in (q, k, v))
        return self.proj(op, attention(op, q, k, v, self.heads, self.head_dim**-0.5))


class GatedMlp(nn.Module):
    def __init__(self, size: int, inner: int, act: str, bias: bool, dtype: ir.DataType):
        super().__init__()
        self.gate_proj = Linear(size, inner, bias, dtype)
        self.up_proj = Linear(size, inner, bias, dtype)
        self.down_proj = Linear(inner, size, bias, dtype)
        self.act = act

    def forward(self, op, x):
        gate = activation(op, self.act, self.gate_proj(op, x))
        return self.down_proj(op, op.Mul(gate, self.up_proj(op, x)))


class VisionBlock(nn.Module):
    def __init__(self, cfg: GlmVisionConfig, dtype: ir.DataType):
        super().__init__()
        size, bias = cfg.hidden_size, cfg.ocr and cfg.attention_bias
        self.norm1 = RMSNorm(size, cfg.norm_eps, dtype)
        self.attn = VisionAttention(cfg, dtype)
        self.norm2 = RMSNorm(size, cfg.norm_eps, dtype)
        self.mlp = GatedMlp(size, cfg.mlp_size, cfg.activation, bias, dtype)

    def forward(self, op, x, places: PatchPlaces, attention: BlockAttention):
        x = op.Add(x, self.attn(op, self.norm1(op, x), places, attention))
        return op.Add(x, self.mlp(op, self.norm2(op, x)))


class Downsample(nn.Module):
    """The Conv2d over each merge block (kernel = stride = spatial_merge_size): one MatMul of
    the block's patches, channels first as the convolution reads them."""

    def __init__(self, cfg: GlmVisionConfig, dtype: ir.DataType):
        super().__init__()
        m, hidden, out = cfg.spatial_merge_size, cfg.hidden_size, cfg.out_hidden_size
        self.weight = nn.Parameter([out, hidden, m, m], dtype)
        self.bias = nn.Parameter([out], dtype)
        self.m, self.hidden, self.out = m, hidden, out

    def forward(self, op, x):
        blocks = op.Reshape(x, [-1, self.m * self.m, self.hidden])
        blocks = op.Reshape(op.Transpose(blocks, perm=[0, 2, 1]), [-1, self.hidden * self.m**2])
        kernel = op.Reshape(self.weight, [self.out, -1])
        return op.Add(op.MatMul(blocks, op.Transpose(kernel, perm=[1, 0])), self.bias)


class PatchMerger(GatedMlp):
    """A linear, LayerNorm and GELU, then the gated MLP (its projections named as the MLP's)."""

    def __init__(self, cfg: GlmVisionConfig, dtype: ir.DataType):
        out = cfg.out_hidden_size
        super().__init__(out, cfg.merger_size, cfg.activation, False, dtype)
        self.proj = Linear(out, out, False, dtype)
        self.post_projection_norm = LayerNorm(out, MERGER_NORM_EPS, dtype)

    def forward(self, op, x):
        x = activation(op, "gelu", self.post_projection_norm(op, self.proj(op, x)))
        return super().forward(op, x)


class GlmVisionTransformer(nn.Module):
    def __init__(self, cfg: GlmVisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.patch_embed = Holder("proj", PatchEmbed(cfg, dtype, bias=True))
        if not cfg.ocr:
            self.post_conv_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
            self.embeddings = Holder("position_embedding", PositionGrid(cfg, dtype))
        self.blocks = nn.ModuleList([VisionBlock(cfg, dtype) for _ in range(cfg.depth)])
        self.post_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.downsample = Downsample(cfg, dtype)
        self.merger = PatchMerger(cfg, dtype)
        self.cfg, self.dtype, self.ep = cfg, dtype, ep

    def expected_fusions(self, plan) -> dict[str, int]:
        # every block's two norms and the post-layernorm read a residual sum, and the first
        # block's norm1 the patches plus positions
        return (
            {"skip_norms": 2 * self.cfg.depth + (not self.cfg.ocr)} if plan.has(SKIP_NORM) else {}
        )

    def forward(self, op, pixels, grid):
        places = patch_places(op, grid, pixels, self.cfg)
        # [1, patches, hidden] throughout, as attention reads them
        x = self.patch_embed(op, op.Unsqueeze(pixels, [0]))
        if not self.cfg.ocr:
            x = op.Add(self.post_conv_layernorm(op, x), self.embeddings(op, places))
        attention = BlockAttention(op, self.ep, places.keep, self.dtype)
        for block in self.blocks:
            x = block(op, x, places, attention)
        x = self.downsample(op, self.post_layernorm(op, x))
        return self.merger(op, x)


class FusedExpertsMoe(SharedExpertsMoe):
    layout = EitherMajor("gate_up_proj", "down_proj")


class FusedExpertsLayer(Glm4MoeLayer):
    moe_cls = FusedExpertsMoe


class FusedExpertsBody(Glm4MoeBody):
    layer_cls = FusedExpertsLayer


class FusedExpertsLM(Glm4MoeLM):
    """GLM-4.5's MoE decoder reading each layer's experts as two stacks: transformers 5 saves
    GLM-4.6V's so (glm4v_moe_text has no conversion of its own), GLM-4.5V's one per expert."""

    body_cls = FusedExpertsBody


class Glm4vModel(VisionLanguageModel):
    image_layout = "patches"
    mrope = True
    image_prompt = "<|begin_of_image|><|image|><|end_of_image|>"

    def make_decoder(self, text, dtype, ep) -> nn.Module:
        tensors = self.args[4]  # the checkpoint's names
        if any(n.endswith(".mlp.experts.gate_up_proj") for n in tensors):
            return FusedExpertsLM(text, dtype, ep)
        return super().make_decoder(text, dtype, ep)

    def make_vision(self, cfg, dtype, ep) -> None:
        self.visual = GlmVisionTransformer(cfg.vision, dtype, ep)

    def image_features(self, op, image) -> ir.Value:
        return self.visual(op, image.pixel_values, image.image_grid_thw)

    def unused_tensors(self) -> tuple[str, ...]:
        # the multi-token-prediction layer after the last where a checkpoint has one (GLM-OCR's
        # layer 16), which transformers skips
        last = self.cfg.text.num_hidden_layers
        return (*super().unused_tensors(), rf"language_model\.model\.layers\.{last}\..*")


# transformers 5 saves `model.visual.`, `model.language_model.` and `lm_head.`; the Qwen-VL
# layout of older saves keeps the text model's own names under `model.`
GLM4V_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^model\.visual\.", "visual."),
    (r"^model\.(embed_tokens|layers|norm)\.", r"language_model.model.\1."),
    (r"^lm_head\.", "language_model.lm_head."),
)
TOWER = (
    "a ViT over flattened patches (learned positions resampled bicubically to each image's "
    "grid, 2-D rotary, attention within each image) with a downsampling convolution and a gated "
    "merger"
)


def _family(name: str, about: str, examples: tuple[str, ...], rules: Glm4vRules) -> Family:
    return Family(
        name,
        Glm4vModel,
        about,
        examples,
        rules=rules,
        task=VLM_TASK,
        category="vlm",
        renames=GLM4V_RENAMES,
    )


GLM46V_TEXT = ("glm4v_text", "glm4v_moe_text")  # transformers builds either by its type
FAMILIES = [
    _family(
        "glm4v",
        f"{TOWER}, into GLM-4 with 3-D multimodal rope",
        ("zai-org/GLM-4.1V-9B-Thinking",),
        Glm4vRules(("glm4v_text",)),
    ),
    _family(
        "glm4v_moe",
        f"{TOWER}, into GLM-4.5's mixture of experts with 3-D multimodal rope",
        ("zai-org/GLM-4.5V",),
        Glm4vRules(("glm4v_moe_text",), "glm4v_moe_vision"),
    ),
    _family(
        "glm46v",
        "GLM-4V's tower and text models (GLM-4 or GLM-4.5's MoE by the text section's type)",
        ("zai-org/GLM-4.6V",),
        Glm4vRules(GLM46V_TEXT, tie_from_text=False),
    ),
    _family(
        "glmga",
        "GLM-4.6V's layout under its own name",
        (),
        Glm4vRules(GLM46V_TEXT, tie_from_text=False),
    ),
    _family(
        "glm_ocr",
        "GLM-4V's tower without learned positions, with q/k norms and biased projections, into "
        "GLM-4 without q/k/v biases",
        ("zai-org/GLM-OCR",),
        GlmOcrRules(("glm_ocr_text",), "glm_ocr_vision"),
    ),
]

"""HunYuanVL (HunyuanOCR): a ViT over the processor's flattened patches, a convolutional patch
merger that frames each image, into HunYuan's dense decoder with XD-RoPE.

The vision graph reads pixel_values [num_patches, channels * patch²] (rows per image in
row-major order, as the processor flattens them) and image_grid_thw [num_images, 3]. The patch
convolution is a MatMul by its flattened kernel; each patch adds the learned position table (a
square grid of max_image_size / patch_size a side) resampled bilinearly to its own image's grid
(GridSample at half-pixel centres, border padding: transformers' interpolate); the blocks
(LayerNorm, attention without rotary, a plain MLP) attend within each image. The merger
(`perceive`) normalizes, runs a spatial_merge_size-strided convolution over each merge block
(a MatMul of the gathered block), GELU and a 1x1 convolution, appends `image_newline` after every
row of blocks, projects into the text model's width, frames the image with `image_begin` and
`image_end`, and normalizes again: rows x (columns + 1) + 2 features an image, one per image
token of the prompt.

The decoder is HunYuan's dense one whose rope turns by XD-RoPE: position_ids carries one row
per `mrope_section` (the last three an image grid token's column, row and image index, every
other row and token its place in the sequence); the sections, doubled, split the whole head and
take their rows in turn, so a head's two halves may turn by different rows (not a rotation),
which only full-width cos/sin tables express: the body's kernel rotates with those.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, PlainMLP, RMSNorm, activation
from converter.components.encoder_attention import BlockAttention
from converter.config import ConfigReader, Rope
from converter.config.patch_tower import PatchTowerConfig
from converter.config.reader import MAX_DIM, MAX_LAYERS
from converter.config.vision import MAX_IMAGE_SIDE
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models import glm4v
from converter.models.hunyuan import HunYuanBody, HunYuanLM, HunYuanRules
from converter.models.pixtral import locate
from converter.models.qwen_vl import same
from converter.models.video_llama_3 import PatchEmbedding
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

INT64, FLOAT = ir.DataType.INT64, ir.DataType.FLOAT


@dataclass(frozen=True)
class HunYuanVisionConfig(PatchTowerConfig):
    spatial_merge_size: int
    position_side: int  # the learned position grid's side, in patches
    norm_eps: float  # every norm of the tower and merger
    mlp_bias = True  # what PlainMLP reads


class HunYuanVlTextRules(HunYuanRules):
    """HunYuan dense's reading, with the older spellings transformers maps (`xdrope` for a
    dynamic rope, `xdrope_section` for `mrope_section`) and the sections required."""

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        key = "rope_scaling" if r.raw.get("rope_scaling") else "rope_parameters"
        params = dict(r.raw.get(key) or {})
        legacy = params.pop("xdrope_section", None)
        if legacy is not None:
            if params.get("mrope_section", legacy) != legacy:
                raise ConfigError(
                    f"'{key}.xdrope_section' = {legacy!r} differs from 'mrope_section' = "
                    f"{params['mrope_section']!r}"
                )
            params["mrope_section"] = legacy
        for kind in ("rope_type", "type"):
            if params.get(kind) == "xdrope":
                params[kind] = "dynamic"
        r.raw[key] = params
        rope = super().rope(r, head_dim)
        sections = rope.mrope_section or ()
        if len(sections) < 3:
            raise ConfigError(
                f"'{key}.mrope_section' = {list(sections)!r}: HunYuanVL turns by at least 3 "
                "position rows"
            )
        if rope.kind in ("dynamic", "longrope"):
            r.refuse(key, f"a {rope.kind} rope's frequencies follow the sequence length")
        return rope


TEXT_RULES = HunYuanVlTextRules(
    {"attention_head_dim": "head_dim", "pad_id": "pad_token_id"},
    qk_norm="head",
    mlp_bias=False,
)


class HunYuanVlRules(VisionLanguageRules):
    text_type = "hunyuan_vl_text"
    text_family = "hunyuan_v1_dense"
    vision_type = "hunyuan_vl_vision"

    def select(self, raw: dict) -> dict:
        """The older flat layout (HunyuanOCR's) keeps the text model's keys at the top."""
        if raw.get("text_config"):
            return raw
        text = {k: v for k, v in raw.items() if k not in ("model_type", "vision_config")}
        return {**raw, "text_config": text}

    def read_text(self, raw: dict, text_type: str):
        return TEXT_RULES.read(ConfigReader(raw, text_type))

    def read_vision(self, r: ConfigReader) -> HunYuanVisionConfig:
        hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not a multiple of 'num_attention_heads' = {heads}"
            )
        if r.get("interpolate_mode", "bilinear") != "bilinear":
            r.refuse("interpolate_mode", "only bilinear resampling of the positions is converted")
        patch, merge = r.int("patch_size", hi=1024), r.int("spatial_merge_size", hi=64)
        side = r.int("max_image_size", hi=MAX_IMAGE_SIDE) // patch
        if side < 1:
            r.refuse("max_image_size", f"it is smaller than one patch ({patch})")
        return HunYuanVisionConfig(
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            num_channels=r.int("num_channels", default=3, hi=64),
            patch_size=patch,
            spatial_merge_size=merge,
            position_side=side,
            activation=r.str("hidden_act"),
            norm_eps=r.float("rms_norm_eps", "layer_norm_eps"),
        )


# -- the vision tower --------------------------------------------------------------------------


@dataclass
class Patches:
    """What the graph computes once from the grids."""

    keep: ir.Value  # [patches, patches] bool: the same image's same frame
    grid_x: ir.Value  # [patches] float32: the patch's centre in its image, in [-1, 1]
    grid_y: ir.Value


def patch_places(op, grid) -> Patches:
    t, h, w = (op.Gather(grid, i, axis=1) for i in range(3))
    area = op.Mul(h, w)
    image, within = locate(op, op.Mul(t, area))
    width, height = op.Gather(w, image), op.Gather(h, image)
    rest = op.Mod(within, op.Gather(area, image))

    def centre(position, size):
        ratio = op.Div(op.Add(op.Cast(position, to=FLOAT), 0.5), op.Cast(size, to=FLOAT))
        return op.Sub(op.Mul(ratio, 2.0), 1.0)

    frame = op.Div(within, op.Gather(area, image))
    return Patches(
        same(op, image, frame),
        centre(op.Mod(rest, width), width),
        centre(op.Div(rest, width), height),
    )


class PositionGrid(glm4v.PositionGrid):
    """GLM-4V's resampled position table, bilinear, after a first row that is not the grid's."""

    mode = "linear"
    leading = 1


class Embeddings(nn.Module):
    def __init__(self, cfg: HunYuanVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.patch_embedding = PatchEmbedding(cfg, dtype)
        self.position_embedding = PositionGrid(cfg, dtype)

    def forward(self, op, pixels, places: Patches):
        x = self.patch_embedding(op, op.Unsqueeze(pixels, [0]))  # [1, patches, hidden]
        return op.Add(x, self.position_embedding(op, places))


class VisionAttention(nn.Module):
    def __init__(self, cfg: HunYuanVisionConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(self, name, Linear(size, size, True, dtype))
        self.heads, self.head_dim = cfg.num_attention_heads, cfg.head_dim

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, attention: BlockAttention):
        q, k, v = (self.q_proj(op, x), self.k_proj(op, x), self.v_proj(op, x))
        return self.o_proj(op, attention(op, q, k, v, self.heads, self.head_dim**-0.5))


class VisionMlp(PlainMLP):
    in_name, out_name = "dense_h_to_4h", "dense_4h_to_h"


class VisionLayer(nn.Module):
    def __init__(self, cfg: HunYuanVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.input_layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.self_attn = VisionAttention(cfg, dtype)
        self.post_attention_layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = VisionMlp(cfg, dtype)

    def forward(self, op, x, attention: BlockAttention):
        x = op.Add(x, self.self_attn(op, self.input_layernorm(op, x), attention))
        return op.Add(x, self.mlp(op, self.post_attention_layernorm(op, x)))


class Conv(nn.Module):
    """A Conv2d over a whole block of patches (kernel = stride): one MatMul of the block's
    [blocks, channels * kernel area] values, channels first as the convolution reads them."""

    def __init__(self, channels: int, out: int, kernel: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([out, channels, kernel, kernel], dtype)
        self.bias = nn.Parameter([out], dtype)
        self.out = out

    def forward(self, op, blocks):
        kernel = op.Transpose(op.Reshape(self.weight, [self.out, -1]), perm=[1, 0])
        return op.Add(op.MatMul(blocks, kernel), self.bias)


class Projection(nn.Module):
    """transformers' Sequential(Conv2d, GELU, Conv2d 1x1): its convolutions are `0` and `2`."""

    def __init__(self, cfg: HunYuanVisionConfig, dtype: ir.DataType):
        super().__init__()
        hidden, m = cfg.hidden_size, cfg.spatial_merge_size
        setattr(self, "0", Conv(hidden, 2 * hidden, m, dtype))
        setattr(self, "2", Conv(2 * hidden, 4 * hidden, 1, dtype))
        self.act = cfg.activation

    def forward(self, op, blocks):
        return getattr(self, "2")(op, activation(op, self.act, getattr(self, "0")(op, blocks)))


class Merger(nn.Module):
    def __init__(self, cfg: HunYuanVisionConfig, text_hidden: int, dtype: ir.DataType):
        super().__init__()
        hidden = cfg.hidden_size
        self.before_rms = RMSNorm(hidden, cfg.norm_eps, dtype)
        self.proj = Projection(cfg, dtype)
        self.image_newline = nn.Parameter([4 * hidden], dtype)
        self.mlp = Linear(4 * hidden, text_hidden, True, dtype)
        self.image_begin = nn.Parameter([text_hidden], dtype)
        self.image_end = nn.Parameter([text_hidden], dtype)
        self.after_rms = RMSNorm(text_hidden, cfg.norm_eps, dtype)
        self.m, self.hidden = cfg.spatial_merge_size, hidden

    def forward(self, op, x, grid):
        m = self.m
        x = op.Reshape(self.before_rms(op, x), [-1, self.hidden])
        t, h, w = (op.Gather(grid, i, axis=1) for i in range(3))
        rows, cols = op.Div(h, m), op.Div(w, m)
        starts = op.Sub(op.CumSum(op.Mul(t, op.Mul(h, w)), 0), op.Mul(t, op.Mul(h, w)))
        # every merge block, image by image, row-major: its patches in the kernel's order
        image, block = locate(op, op.Mul(rows, cols))
        width, wide = op.Gather(w, image), op.Gather(cols, image)
        row, col = op.Div(block, wide), op.Mod(block, wide)
        first = op.Add(op.Gather(starts, image), op.Mul(op.Add(op.Mul(row, width), col), m))
        within = np.arange(m * m, dtype=np.int64)
        down = op.Constant(value=ir.tensor(within // m))
        across = op.Constant(value=ir.tensor(within % m))
        patches = op.Add(
            op.Unsqueeze(first, [1]), op.Add(op.Mul(op.Unsqueeze(width, [1]), down), across)
        )  # [blocks, m²]
        gathered = op.Transpose(op.Gather(x, patches), perm=[0, 2, 1])  # [blocks, hidden, m²]
        merged = self.proj(op, op.Reshape(gathered, [-1, self.hidden * m * m]))
        table = op.Concat(merged, op.Unsqueeze(self.image_newline, [0]), axis=0)
        newline = op.Shape(merged, start=0, end=1)
        # every feature, image by image: begin, each row of blocks and a newline, end
        per_image = op.Add(op.Mul(rows, op.Add(cols, 1)), 2)
        image, place = locate(op, per_image)
        wide = op.Add(op.Gather(cols, image), 1)
        inner = op.Sub(place, 1)
        row, col = op.Div(inner, wide), op.Mod(inner, wide)
        first_block = op.Sub(op.CumSum(op.Mul(rows, cols), 0), op.Mul(rows, cols))
        block = op.Add(op.Gather(first_block, image), op.Add(op.Mul(row, op.Sub(wide, 1)), col))
        begin = op.Equal(place, 0)
        end = op.Equal(place, op.Sub(op.Gather(per_image, image), 1))
        framing = op.Or(op.Or(begin, end), op.Equal(col, op.Sub(wide, 1)))
        index = op.Where(framing, op.Squeeze(newline, [0]), block)
        y = self.mlp(op, op.Gather(table, index))
        y = op.Where(op.Unsqueeze(begin, [1]), self.image_begin, y)
        y = op.Where(op.Unsqueeze(end, [1]), self.image_end, y)
        return self.after_rms(op, y)


class VisionTower(nn.Module):
    def __init__(self, cfg: HunYuanVisionConfig, text_hidden: int, dtype: ir.DataType, ep):
        super().__init__()
        self.embeddings = Embeddings(cfg, dtype)
        self.layers = nn.ModuleList([VisionLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)])
        self.perceive = Merger(cfg, text_hidden, dtype)
        self.dtype, self.ep = dtype, ep

    def expected_fusions(self, plan) -> dict[str, int]:
        # every layer's two norms read a residual sum (the first's, patches plus positions),
        # and the merger's first norm the last layer's
        return {"skip_norms": 2 * len(self.layers) + 1} if plan.has(SKIP_NORM) else {}

    def forward(self, op, pixels, grid):
        places = patch_places(op, grid)
        x = self.embeddings(op, pixels, places)
        attention = BlockAttention(op, self.ep, places.keep, self.dtype)
        for layer in self.layers:
            x = layer(op, x, attention)
        return self.perceive(op, x, grid)


# -- the decoder -------------------------------------------------------------------------------


class SectionRotary:
    """q or k [batch, sequence, heads * head_dim] turned by XD-RoPE: full-width cos/sin whose
    doubled sections take the rows of position_ids [rows, batch, sequence] in turn (computed
    once per rope), applied as x cos + rotate_half(x) sin in float32."""

    def __init__(self, dtype: ir.DataType, position_ids):
        self.dtype, self.position_ids = dtype, position_ids
        self.tables: dict[Rope, tuple] = {}

    def _table(self, op, rope: Rope):
        if rope not in self.tables:
            inv = op.Constant(value=ir.tensor(rope.inv_freq().astype(np.float32)))
            angles = op.Mul(op.Unsqueeze(op.Cast(self.position_ids, to=FLOAT), [-1]), inv)
            whole = op.Concat(angles, angles, axis=-1)  # [rows, batch, sequence, head_dim]
            sections = [2 * s for s in rope.mrope_section]
            parts = op.Split(whole, sections, axis=-1, _outputs=len(sections))
            rows = len(sections)
            picked = op.Concat(
                *[op.Gather(p, i % rows, axis=0) for i, p in enumerate(parts)], axis=-1
            )
            scale = rope.attention_scaling()
            cos, sin = (op.Unsqueeze(f(picked), [2]) for f in (op.Cos, op.Sin))
            if scale != 1.0:
                cos, sin = op.Mul(cos, scale), op.Mul(sin, scale)
            self.tables[rope] = cos, sin
        return self.tables[rope]

    def __call__(self, op, x, heads: int, rope: Rope):
        cos, sin = self._table(op, rope)
        x32 = x if self.dtype == FLOAT else op.Cast(x, to=FLOAT)
        x32 = op.Reshape(x32, [0, 0, heads, rope.dim])
        first, second = op.Split(x32, num_outputs=2, axis=-1, _outputs=2)
        turned = op.Add(op.Mul(x32, cos), op.Mul(op.Concat(op.Neg(second), first, axis=-1), sin))
        turned = op.Reshape(turned, [0, 0, -1])
        return turned if self.dtype == FLOAT else op.Cast(turned, to=self.dtype)


class HunYuanVlBody(HunYuanBody):
    def make_kernel(self, op, inputs):
        kernel = super().make_kernel(op, inputs)
        kernel.rotate = SectionRotary(self.kernel.dtype, inputs.position_ids)
        return kernel


class HunYuanVlLM(HunYuanLM):
    body_cls = HunYuanVlBody


# -- the model ---------------------------------------------------------------------------------


class HunYuanVlModel(VisionLanguageModel):
    image_layout = "patches"
    mrope = True
    position_rule = "xdrope"
    image_prompt = (  # image start, the image (one token, expanded to its count), image end
        "<｜hy_place▁holder▁no▁100｜><｜hy_place▁holder▁no▁102｜><｜hy_place▁holder▁no▁101｜>"
    )

    @property
    def mrope_rows(self) -> int:
        return len(self.cfg.text.rope.mrope_section)

    def make_vision(self, cfg, dtype, ep) -> None:
        self.vit = VisionTower(cfg.vision, cfg.text.hidden_size, dtype, ep)

    def make_decoder(self, text, dtype, ep) -> nn.Module:
        return HunYuanVlLM(text, dtype, ep)

    def image_features(self, op, image) -> ir.Value:
        return self.vit(op, image.pixel_values, image.image_grid_thw)

    def unused_tensors(self) -> tuple[str, ...]:
        # a separator the open-source model never places
        return (*super().unused_tensors(), r"vit\.perceive\.image_sep")


# the Hub's layout (and transformers 5's save_pretrained) keeps `model.` for the text model and
# `vit.` for the tower; transformers 5's module names nest both under `model.`
RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^model\.(embed_tokens|layers|norm)\.", r"language_model.model.\1."),
    (r"^model\.vision_tower\.", "vit."),
    (r"^lm_head\.", "language_model.lm_head."),
    (r"^(vit\.layers\.\d+)\.layer_norm1\.", r"\1.input_layernorm."),
    (r"^(vit\.layers\.\d+)\.layer_norm2\.", r"\1.post_attention_layernorm."),
    (r"^(vit\.layers\.\d+\.mlp)\.fc1\.", r"\1.dense_h_to_4h."),
    (r"^(vit\.layers\.\d+\.mlp)\.fc2\.", r"\1.dense_4h_to_h."),
    (r"^vit\.patch_merger\.proj_conv\.", "vit.perceive.proj.0."),
    (r"^vit\.patch_merger\.proj_out\.", "vit.perceive.proj.2."),
    (r"^vit\.patch_merger\.", "vit.perceive."),
)

FAMILIES = [
    Family(
        "hunyuan_vl",
        HunYuanVlModel,
        "a ViT over flattened patches (learned positions resampled bilinearly to each image's "
        "grid, attention within each image) and a convolutional merger framing each image's "
        "rows, into HunYuan dense with XD-RoPE (4-axis multimodal rope)",
        ("tencent/HunyuanOCR",),
        rules=HunYuanVlRules(),
        task=VLM_TASK,
        category="vlm",
        renames=RENAMES,
    ),
]

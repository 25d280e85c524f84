"""Qwen2.5-VL: a vision transformer over the processor's flattened patches into Qwen2 with
multimodal (3-D) rope.

The vision graph reads pixel_values [num_patches, channels * temporal_patch_size * patch²]
(each row one patch, rows in the processor's order: per image, per frame, per merge block of
spatial_merge_size² patches) and image_grid_thw [num_images, 3]. The 3-D patch convolution is a
MatMul by its flattened kernel. Every patch's place is computed in the graph from the grids:
its image, frame, row and column, hence its 2-D rotary angles (rows, then columns, over the
head's halves) and its attention: the blocks at `fullatt_block_indexes` attend within a frame,
the others within a window of `window_size` pixels (window_size / patch_size /
spatial_merge_size merge blocks a side). transformers reorders the patches window by window
and back; attention masked by window is the same computation without the reordering. The
merger (RMSNorm, then an MLP over each merge block's concatenated patches) projects into the
text model's width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, RMSNorm, activation
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.config.vision import int_list
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.models.vision_language import Holder, VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

INT64, FLOAT = ir.DataType.INT64, ir.DataType.FLOAT
NORM_EPS = 1e-6  # transformers' vision RMSNorms


@dataclass(frozen=True)
class QwenVisionConfig:
    depth: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    out_hidden_size: int
    in_channels: int
    patch_size: int
    temporal_patch_size: int
    spatial_merge_size: int
    window_size: int
    fullatt_block_indexes: tuple[int, ...]
    activation: str
    rope_theta: float

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def patch_width(self) -> int:
        """A row of pixel_values: one patch's channels x frames x pixels."""
        return self.in_channels * self.temporal_patch_size * self.patch_size**2

    @property
    def window_blocks(self) -> int:
        """Merge blocks along a window's side."""
        return self.window_size // self.spatial_merge_size // self.patch_size


class Qwen25VlRules(VisionLanguageRules):
    text_type = "qwen2_5_vl_text"
    text_family = "qwen2"
    vision_type = "qwen2_5_vl_vision"

    def read_vision(self, r: ConfigReader) -> QwenVisionConfig:
        hidden, heads = r.int("hidden_size"), r.int("num_heads")
        if hidden % heads or (hidden // heads) % 4:
            raise ConfigError(
                f"'hidden_size' = {hidden} over 'num_heads' = {heads} must give a head size "
                "divisible by 4 (its rotary halves rows and columns)"
            )
        depth = r.int("depth", hi=MAX_LAYERS)
        full = (
            int_list(r, "fullatt_block_indexes", hi=depth - 1, lo=0)
            if r.get("fullatt_block_indexes")
            else ()
        )
        rope = r.get("rope_parameters") or {}
        if rope.get("rope_type", "axial") != "axial":
            raise ConfigError(f"'rope_parameters' = {rope!r}: the vision rope is axial only")
        cfg = QwenVisionConfig(
            depth=depth,
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_heads=heads,
            out_hidden_size=r.int("out_hidden_size"),
            in_channels=r.int("in_channels", default=3, hi=64),
            patch_size=r.int("patch_size", hi=1024),
            temporal_patch_size=r.int("temporal_patch_size", hi=64),
            spatial_merge_size=r.int("spatial_merge_size", hi=64),
            window_size=r.int("window_size", hi=1 << 16),
            fullatt_block_indexes=full,
            activation=r.str("hidden_act"),
            rope_theta=float(rope.get("rope_theta", r.get("rope_theta", 10000.0))),
        )
        if cfg.window_blocks < 1:
            raise ConfigError(
                f"'window_size' = {cfg.window_size} is smaller than one merge block "
                f"(patch_size {cfg.patch_size} x spatial_merge_size {cfg.spatial_merge_size})"
            )
        return cfg

    def read_extra(self, r: ConfigReader, text, vision: QwenVisionConfig) -> dict:
        if vision.out_hidden_size != text.hidden_size:
            raise ConfigError(
                f"vision_config: 'out_hidden_size' = {vision.out_hidden_size} differs from the "
                f"text model's 'hidden_size' = {text.hidden_size}"
            )
        if text.rope is None or not text.rope.mrope_section:
            raise ConfigError("text_config: the rope has no 'mrope_section'")
        return {
            key: r.int(key, lo=0, hi=MAX_VOCAB)
            for key in ("video_token_id", "vision_start_token_id")
        }


class PatchEmbed(nn.Module):
    """The Conv3d whose kernel equals its stride: one MatMul of each flattened patch."""

    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType):
        super().__init__()
        t, p = cfg.temporal_patch_size, cfg.patch_size
        self.weight = nn.Parameter([cfg.hidden_size, cfg.in_channels, t, p, p], dtype)
        self.width, self.hidden = cfg.patch_width, cfg.hidden_size

    def forward(self, op, patches):
        kernel = op.Reshape(self.weight, [self.hidden, self.width])
        return op.MatMul(patches, op.Transpose(kernel, perm=[1, 0]))


class MergerMlp(nn.Module):
    """transformers' Sequential(Linear, GELU, Linear): its linears are `0` and `2`."""

    def __init__(self, width: int, out: int, dtype: ir.DataType):
        super().__init__()
        setattr(self, "0", Linear(width, width, True, dtype))
        setattr(self, "2", Linear(width, out, True, dtype))

    def forward(self, op, x):
        return getattr(self, "2")(op, activation(op, "gelu", getattr(self, "0")(op, x)))


@dataclass
class PatchPlaces:
    """What the graph computes once from the grids for every block."""

    cos: ir.Value  # [patches, 1, head_dim]
    sin: ir.Value
    full: ir.Value  # [patches, patches] bool: same frame
    window: ir.Value  # [patches, patches] bool: same window


def patch_places(op, grid, patches: ir.Value, cfg: QwenVisionConfig, dtype) -> PatchPlaces:
    m, blocks = cfg.spatial_merge_size, cfg.window_blocks
    t, h, w = (op.Gather(grid, i, axis=1) for i in range(3))
    area = op.Mul(h, w)
    sizes = op.Mul(t, area)
    ends = op.CumSum(sizes, 0)
    index = op.Range(0, op.Squeeze(op.Shape(patches, start=0, end=1), [0]), 1)
    image = op.ReduceSum(
        op.Cast(op.GreaterOrEqual(op.Unsqueeze(index, [1]), op.Unsqueeze(ends, [0])), to=INT64),
        [1],
        keepdims=0,
    )
    within = op.Sub(index, op.Gather(op.Sub(ends, sizes), image))
    area, width = op.Gather(area, image), op.Gather(w, image)
    frame = op.Div(within, area)
    rest = op.Mod(within, area)
    block_row = op.Div(rest, op.Mul(width, m))
    block_col = op.Mod(op.Div(rest, m * m), op.Div(width, m))
    row = op.Add(op.Mul(block_row, m), op.Mod(op.Div(rest, m), m))
    col = op.Add(op.Mul(block_col, m), op.Mod(rest, m))

    def same(value):
        return op.Equal(op.Unsqueeze(value, [1]), op.Unsqueeze(value, [0]))

    full = op.And(same(image), same(frame))
    window = op.And(full, op.And(same(op.Div(block_row, blocks)), same(op.Div(block_col, blocks))))
    quarter = cfg.head_dim // 4
    inv = 1.0 / cfg.rope_theta ** (np.arange(0, 2 * quarter, 2, dtype=np.float32) / (2 * quarter))
    inv = op.Constant(value=ir.tensor(inv.astype(np.float32)))

    def angles(position):
        return op.Mul(op.Unsqueeze(op.Cast(position, to=FLOAT), [1]), inv)

    half = op.Concat(angles(row), angles(col), axis=-1)
    emb = op.Unsqueeze(op.Concat(half, half, axis=-1), [1])
    return PatchPlaces(op.Cos(emb), op.Sin(emb), full, window)


def rotate(op, x, places: PatchPlaces, dtype):
    """x [patches, heads, head_dim] turned by its patch's angles (in float32, as transformers)."""
    x = x if dtype == FLOAT else op.Cast(x, to=FLOAT)
    first, second = op.Split(x, num_outputs=2, axis=-1, _outputs=2)
    turned = op.Add(
        op.Mul(x, places.cos), op.Mul(op.Concat(op.Neg(second), first, axis=-1), places.sin)
    )
    return turned if dtype == FLOAT else op.Cast(turned, to=dtype)


class VisionAttention(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.qkv = Linear(cfg.hidden_size, 3 * cfg.hidden_size, True, dtype)
        self.proj = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.heads, self.head_dim, self.dtype = cfg.num_heads, cfg.head_dim, dtype
        self.hidden = cfg.hidden_size

    def forward(self, op, x, places: PatchPlaces, mask):
        qkv = op.Reshape(self.qkv(op, x), [0, 3, self.heads, self.head_dim])
        q, k, v = (
            op.Squeeze(part, [1]) for part in op.Split(qkv, num_outputs=3, axis=1, _outputs=3)
        )
        q, k = rotate(op, q, places, self.dtype), rotate(op, k, places, self.dtype)
        q, k, v = (op.Reshape(part, [1, -1, self.hidden]) for part in (q, k, v))
        out = op.Attention(
            q,
            k,
            v,
            mask,
            q_num_heads=self.heads,
            kv_num_heads=self.heads,
            scale=self.head_dim**-0.5,
        )
        return self.proj(op, op.Reshape(out, [-1, self.hidden]))


class VisionMlp(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType):
        super().__init__()
        size, inner = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = Linear(size, inner, True, dtype)
        self.up_proj = Linear(size, inner, True, dtype)
        self.down_proj = Linear(inner, size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        gate = activation(op, self.act, self.gate_proj(op, x))
        return self.down_proj(op, op.Mul(gate, self.up_proj(op, x)))


class VisionBlock(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.norm1 = RMSNorm(cfg.hidden_size, NORM_EPS, dtype)
        self.attn = VisionAttention(cfg, dtype)
        self.norm2 = RMSNorm(cfg.hidden_size, NORM_EPS, dtype)
        self.mlp = VisionMlp(cfg, dtype)
        self.full = index in cfg.fullatt_block_indexes

    def forward(self, op, x, places: PatchPlaces):
        mask = places.full if self.full else places.window
        x = op.Add(x, self.attn(op, self.norm1(op, x), places, mask))
        return op.Add(x, self.mlp(op, self.norm2(op, x)))


class PatchMerger(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.width = cfg.hidden_size * cfg.spatial_merge_size**2
        self.ln_q = RMSNorm(cfg.hidden_size, NORM_EPS, dtype)
        self.mlp = MergerMlp(self.width, cfg.out_hidden_size, dtype)

    def forward(self, op, x):
        x = op.Reshape(self.ln_q(op, x), [-1, self.width])
        return self.mlp(op, x)


class QwenVisionTransformer(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.patch_embed = Holder("proj", PatchEmbed(cfg, dtype))
        self.blocks = nn.ModuleList([VisionBlock(cfg, i, dtype) for i in range(cfg.depth)])
        self.merger = PatchMerger(cfg, dtype)
        self.cfg, self.dtype = cfg, dtype

    def forward(self, op, pixels, grid):
        x = self.patch_embed(op, pixels)
        places = patch_places(op, grid, pixels, self.cfg, self.dtype)
        for block in self.blocks:
            x = block(op, x, places)
        return self.merger(op, x)


class Qwen25VlModel(VisionLanguageModel):
    image_layout = "patches"
    mrope = True
    image_prompt = "<|vision_start|><|image_pad|><|vision_end|>"  # genai expands the pads

    def make_vision(self, cfg, dtype, ep) -> None:
        self.visual = QwenVisionTransformer(cfg.vision, dtype)

    @classmethod
    def genai_fields(cls, cfg, section: str) -> dict:
        if section == "model":
            return {**super().genai_fields(cfg, section), **cfg.extra}
        if section == "vision":
            vision = cfg.vision
            return {
                "spatial_merge_size": vision.spatial_merge_size,
                "patch_size": vision.patch_size,
                "window_size": vision.window_size,
            }
        return {}

    def image_features(self, op, image) -> ir.Value:
        return self.visual(op, image.pixel_values, image.image_grid_thw)


# the Hub's checkpoints (and transformers 5's save_pretrained) keep `model.` for the text
# model, `visual.` and `lm_head.`; transformers 5's module names put them under `model.`
QWEN25_VL_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^model\.visual\.", "visual."),
    (r"^model\.(embed_tokens|layers|norm)\.", r"language_model.model.\1."),
    (r"^lm_head\.", "language_model.lm_head."),
)

FAMILIES = [
    Family(
        "qwen2_5_vl",
        Qwen25VlModel,
        "a ViT over flattened patches with 2-D rotary, window attention (full attention in "
        "fullatt_block_indexes) and a patch merger, into Qwen2 with 3-D multimodal rope",
        ("Qwen/Qwen2.5-VL-3B-Instruct",),
        rules=Qwen25VlRules(),
        task=VLM_TASK,
        category="vlm",
        genai="qwen2_5_vl",
        renames=QWEN25_VL_RENAMES,
    ),
]

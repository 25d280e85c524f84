"""What the Qwen-VL families (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) share: a vision transformer over
the processor's flattened patches into a Qwen decoder with multimodal (3-D) rope.

The vision graph reads pixel_values [num_patches, channels * temporal_patch_size * patch²]
(each row one patch, rows in the processor's order: per image, per frame, per merge block of
spatial_merge_size² patches) and image_grid_thw [num_images, 3]. The 3-D patch convolution is a
MatMul by its flattened kernel. Every patch's place (its image, frame, row and column) is
computed in the graph from the grids, hence its 2-D rotary angles (rows, then columns, over the
head's halves) and which patches it attends to (masks built by `same`). The merger concatenates
each merge block's spatial_merge_size² patches and projects them into the text model's width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, activation
from converter.components.encoder_attention import BlockAttention
from converter.config.reader import MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA
from converter.models.vision_language import VisionLanguageModel

INT64, FLOAT = ir.DataType.INT64, ir.DataType.FLOAT
NORM_EPS = 1e-6  # transformers' vision norms


@dataclass(frozen=True)
class QwenVisionConfig:
    depth: int
    hidden_size: int  # the tower's width
    intermediate_size: int
    num_heads: int
    out_hidden_size: int  # the merger's output: the text model's width
    in_channels: int
    patch_size: int
    temporal_patch_size: int
    spatial_merge_size: int
    activation: str
    rope_theta: float
    window_size: int = 0  # Qwen2.5-VL's attention windows, in pixels
    fullatt_block_indexes: tuple[int, ...] = ()
    num_position_embeddings: int = 0  # Qwen3-VL's learned position grid
    deepstack_visual_indexes: tuple[int, ...] = ()  # Qwen3-VL's DeepStack layers
    num_key_value_heads: int = 0  # EXAONE 4.5's grouped keys and values (0: num_heads)
    mlp_bias = True  # what the shared MLP components read
    fused_gate_up = False

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_heads

    @property
    def patch_width(self) -> int:
        """A row of pixel_values: one patch's channels x frames x pixels."""
        return self.in_channels * self.temporal_patch_size * self.patch_size**2


def read_patch_fields(r: ConfigReader, hidden: int) -> dict:
    """The vision_config fields every Qwen-VL tower reads, for a tower `hidden` wide."""
    heads = r.int("num_heads")
    if hidden % heads or (hidden // heads) % 4:
        raise ConfigError(
            f"the tower's width {hidden} over 'num_heads' = {heads} must give a head size "
            "divisible by 4 (its rotary halves rows and columns)"
        )
    rope = r.get("rope_parameters") or {}
    if rope.get("rope_type", "axial") != "axial":
        raise ConfigError(f"'rope_parameters' = {rope!r}: the vision rope is axial only")
    return {
        "depth": r.int("depth", hi=MAX_LAYERS),
        "hidden_size": hidden,
        "num_heads": heads,
        "in_channels": r.int("in_channels", default=3, hi=64),
        "patch_size": r.int("patch_size", hi=1024),
        "temporal_patch_size": r.int("temporal_patch_size", hi=64),
        "spatial_merge_size": r.int("spatial_merge_size", hi=64),
        "activation": r.str("hidden_act"),
        "rope_theta": float(rope.get("rope_theta", r.get("rope_theta", 10000.0))),
    }


class QwenVlRules(VisionLanguageRules):
    text_family = "qwen2"

    def read_extra(self, r: ConfigReader, text, vision: QwenVisionConfig) -> dict:
        if vision.out_hidden_size != text.hidden_size:
            raise ConfigError(
                f"vision_config: the merger's output width {vision.out_hidden_size} differs "
                f"from the text model's 'hidden_size' = {text.hidden_size}"
            )
        if text.rope is None or not text.rope.mrope_section:
            raise ConfigError("text_config: the rope has no 'mrope_section'")
        return {
            key: r.int(key, lo=0, hi=MAX_VOCAB)
            for key in ("video_token_id", "vision_start_token_id")
        }


class PatchEmbed(nn.Module):
    """The Conv3d whose kernel equals its stride: one MatMul of each flattened patch."""

    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType, bias: bool = False):
        super().__init__()
        t, p = cfg.temporal_patch_size, cfg.patch_size
        self.weight = nn.Parameter([cfg.hidden_size, cfg.in_channels, t, p, p], dtype)
        self.bias = nn.Parameter([cfg.hidden_size], dtype) if bias else None
        self.width, self.hidden = cfg.patch_width, cfg.hidden_size

    def forward(self, op, patches):
        kernel = op.Reshape(self.weight, [self.hidden, self.width])
        x = op.MatMul(patches, op.Transpose(kernel, perm=[1, 0]))
        return x if self.bias is None else op.Add(x, self.bias)


class MergerMlp(nn.Module):
    """transformers' Sequential(Linear, GELU, Linear): its linears are `0` and `2`."""

    def __init__(self, width: int, out: int, dtype: ir.DataType):
        super().__init__()
        setattr(self, "0", Linear(width, width, True, dtype))
        setattr(self, "2", Linear(width, out, True, dtype))

    def forward(self, op, x):
        return getattr(self, "2")(op, activation(op, "gelu", getattr(self, "0")(op, x)))


@dataclass
class PatchGrid:
    """Every patch's place, computed once in the graph from the grids ([patches] int64 each)."""

    image: ir.Value
    frame: ir.Value
    row: ir.Value  # in patches, within its frame
    col: ir.Value
    block_row: ir.Value  # in merge blocks
    block_col: ir.Value
    height: ir.Value  # its image's grid, in patches
    width: ir.Value


def patch_grid(op, grid, patches: ir.Value, merge: int) -> PatchGrid:
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
    area, height, width = op.Gather(area, image), op.Gather(h, image), op.Gather(w, image)
    rest = op.Mod(within, area)
    block_row = op.Div(rest, op.Mul(width, merge))
    block_col = op.Mod(op.Div(rest, merge * merge), op.Div(width, merge))
    row = op.Add(op.Mul(block_row, merge), op.Mod(op.Div(rest, merge), merge))
    col = op.Add(op.Mul(block_col, merge), op.Mod(rest, merge))
    frame = op.Div(within, area)
    return PatchGrid(image, frame, row, col, block_row, block_col, height, width)


def same(op, *values) -> ir.Value:
    """[patches, patches] bool: where every one of `values` agrees."""
    masks = [op.Equal(op.Unsqueeze(v, [1]), op.Unsqueeze(v, [0])) for v in values]
    mask = masks[0]
    for other in masks[1:]:
        mask = op.And(mask, other)
    return mask


@dataclass
class Rotary:
    cos: ir.Value  # [patches, 1, head_dim] float32
    sin: ir.Value


def axial_rotary(op, places: PatchGrid, head_dim: int, theta: float) -> Rotary:
    quarter = head_dim // 4
    inv = 1.0 / theta ** (np.arange(0, 2 * quarter, 2, dtype=np.float32) / (2 * quarter))
    inv = op.Constant(value=ir.tensor(inv.astype(np.float32)))

    def angles(position):
        return op.Mul(op.Unsqueeze(op.Cast(position, to=FLOAT), [1]), inv)

    half = op.Concat(angles(places.row), angles(places.col), axis=-1)
    emb = op.Unsqueeze(op.Concat(half, half, axis=-1), [1])
    return Rotary(op.Cos(emb), op.Sin(emb))


def rotate(op, x, rotary: Rotary, dtype):
    """x [patches, heads, head_dim] turned by its patch's angles (in float32, as transformers)."""
    x = x if dtype == FLOAT else op.Cast(x, to=FLOAT)
    first, second = op.Split(x, num_outputs=2, axis=-1, _outputs=2)
    turned = op.Add(
        op.Mul(x, rotary.cos), op.Mul(op.Concat(op.Neg(second), first, axis=-1), rotary.sin)
    )
    return turned if dtype == FLOAT else op.Cast(turned, to=dtype)


class VisionAttention(nn.Module):
    """One fused qkv projection: queries for every head, then keys and values for the
    `kv_heads` each group of heads shares."""

    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.hidden, self.kv_width = cfg.hidden_size, cfg.kv_heads * cfg.head_dim
        self.qkv = Linear(cfg.hidden_size, self.hidden + 2 * self.kv_width, True, dtype)
        self.proj = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.heads, self.kv_heads, self.head_dim = cfg.num_heads, cfg.kv_heads, cfg.head_dim
        self.dtype = dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        fused = plan.has(ENCODER_MHA) and self.kv_heads == self.heads  # MHA has no shared heads
        return {ENCODER_MHA: 1 if fused else 0}

    def forward(self, op, x, rotary: Rotary, attend: BlockAttention):
        q, k, v = op.Split(
            self.qkv(op, x), [self.hidden, self.kv_width, self.kv_width], axis=-1, _outputs=3
        )
        q, k = (
            rotate(op, op.Reshape(part, [0, -1, self.head_dim]), rotary, self.dtype)
            for part in (q, k)
        )
        q = op.Reshape(q, [1, -1, self.hidden])
        k, v = (op.Reshape(part, [1, -1, self.kv_width]) for part in (k, v))
        out = attend(op, q, k, v, self.heads, self.head_dim**-0.5, self.kv_heads)
        return self.proj(op, op.Reshape(out, [-1, self.hidden]))


class VisionBlock(nn.Module):
    """norm1 -> attention, norm2 -> MLP, each added back; the family gives its norm (a
    factory: the block has two) and its MLP."""

    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType, norm, mlp: nn.Module):
        super().__init__()
        self.norm1 = norm(cfg.hidden_size, NORM_EPS, dtype)
        self.attn = VisionAttention(cfg, dtype)
        self.norm2 = norm(cfg.hidden_size, NORM_EPS, dtype)
        self.mlp = mlp

    def forward(self, op, x, rotary: Rotary, attend: BlockAttention):
        x = op.Add(x, self.attn(op, self.norm1(op, x), rotary, attend))
        return op.Add(x, self.mlp(op, self.norm2(op, x)))


class QwenVlModel(VisionLanguageModel):
    image_layout = "patches"
    mrope = True
    image_prompt = "<|vision_start|><|image_pad|><|vision_end|>"  # genai expands the pads

    @classmethod
    def genai_fields(cls, cfg, section: str) -> dict:
        if section == "model":
            return {**super().genai_fields(cfg, section), **cfg.extra}
        if section == "vision":
            vision = cfg.vision
            return {
                "spatial_merge_size": vision.spatial_merge_size,
                "patch_size": vision.patch_size,
                **({"window_size": vision.window_size} if vision.window_size else {}),
            }
        return {}

    def image_features(self, op, image) -> ir.Value:
        return self.visual(op, image.pixel_values, image.image_grid_thw)


# the Hub's checkpoints (and transformers 5's save_pretrained) keep `model.` for the text
# model, `visual.` and `lm_head.`; transformers 5's module names put them under `model.`
QWEN_VL_RENAMES = (
    (r"^model\.language_model\.", "language_model.model."),
    (r"^model\.visual\.", "visual."),
    (r"^model\.(embed_tokens|layers|norm)\.", r"language_model.model.\1."),
    (r"^lm_head\.", "language_model.lm_head."),
)

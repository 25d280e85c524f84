"""The Pixtral vision tower (Mistral 3, LightOnOCR): images of any size, each cut into patches
by a convolution, normalized (ln_pre), then a pre-norm transformer whose attention is 2-D
rotary over each image's own patch grid and block-diagonal (no image sees another's patches),
with a SiLU-gated MLP.

The tower reads pixel_values [num_images, channels, height, width] (images padded to the
largest) and image_sizes [num_images, 2] (each image's height and width in pixels); it crops
every image to its own grid of whole patches and returns all images' patches in one sequence,
image by image, row by row. Every patch's image, row and column are computed in the graph from
the sizes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, RMSNorm
from converter.components.conv2d import Conv2d
from converter.components.encoder_attention import BlockAttention
from converter.components.mlp import GatedMLP
from converter.config.patch_tower import PatchTowerConfig
from converter.config.reader import MAX_LAYERS, ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA

INT64, FLOAT = ir.DataType.INT64, ir.DataType.FLOAT
NORM_EPS = 1e-5  # transformers' Pixtral RMSNorms


@dataclass(frozen=True)
class PixtralVisionConfig(PatchTowerConfig):
    rope_theta: float
    # patches a side of one merged image token (the VLM's projector; 1: none)
    spatial_merge_size: int = 1
    mlp_bias = False  # what GatedMLP reads
    fused_gate_up = False


def read_pixtral(r: ConfigReader) -> PixtralVisionConfig:
    hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
    if hidden % heads or (hidden // heads) % 4:
        raise ConfigError(
            f"'hidden_size' = {hidden} over 'num_attention_heads' = {heads} must give a head "
            "size divisible by 4 (its rotary halves rows and columns)"
        )
    rope = r.get("rope_parameters") or {}
    if rope.get("rope_type", "axial") not in ("axial", "default"):  # transformers: default is axial
        raise ConfigError(f"'rope_parameters' = {rope!r}: the vision rope is axial only")
    patch = r.get("patch_size")
    if not isinstance(patch, int) or isinstance(patch, bool) or not 1 <= patch <= 1024:
        raise ConfigError(f"'patch_size' = {patch!r}: one square patch side is supported")
    return PixtralVisionConfig(
        hidden_size=hidden,
        intermediate_size=r.int("intermediate_size"),
        num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
        num_attention_heads=heads,
        num_channels=r.int("num_channels", default=3, hi=64),
        patch_size=patch,
        activation=r.str("hidden_act"),
        rope_theta=float(rope.get("rope_theta", r.get("rope_theta", 10000.0))),
    )


def locate(op, counts: ir.Value) -> tuple[ir.Value, ir.Value]:
    """For every index of a sequence holding counts[i] items of image i, in order: its image
    and its place within that image."""
    ends = op.CumSum(counts, 0)
    index = op.Range(0, op.ReduceSum(counts, keepdims=0), 1)
    past = op.GreaterOrEqual(op.Unsqueeze(index, [1]), op.Unsqueeze(ends, [0]))
    image = op.ReduceSum(op.Cast(past, to=INT64), [1], keepdims=0)
    return image, op.Sub(index, op.Gather(op.Sub(ends, counts), image))


@dataclass
class PatchGrid:
    """What the graph computes once from the image sizes for every layer."""

    rows: ir.Value  # [num_images] patch rows of each image
    cols: ir.Value  # [num_images] patch columns
    cos: ir.Value  # [patches, 1, head_dim]
    sin: ir.Value
    attend: BlockAttention  # each patch attends its own image's


def image_sizes_of(op, pixels, image_sizes) -> ir.Value:
    """[num_images, 2]: `image_sizes`, or, when its rows are not one per image, the image at
    its full height and width. onnxruntime-genai runs a prompt of several images one image at a
    time, each cropped to its size, yet feeds the whole image_sizes."""
    batch = op.Shape(pixels, start=0, end=1)
    full = op.Unsqueeze(op.Shape(pixels, start=2, end=4), [0])
    one_each = op.Equal(op.Shape(image_sizes, start=0, end=1), batch)
    return op.Slice(op.Where(one_each, image_sizes, full), [0], batch, [0])


class PixtralAttention(nn.Module):
    def __init__(self, cfg: PixtralVisionConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.q_proj = Linear(size, size, False, dtype)
        self.k_proj = Linear(size, size, False, dtype)
        self.v_proj = Linear(size, size, False, dtype)
        self.o_proj = Linear(size, size, False, dtype)
        self.heads, self.head_dim, self.size, self.dtype = (
            cfg.num_attention_heads,
            cfg.head_dim,
            size,
            dtype,
        )

    def _turn(self, op, x, grid: PatchGrid):
        """x [patches, hidden] rotated per head by its patch's angles."""
        x = op.Reshape(x, [0, self.heads, self.head_dim])
        first, second = op.Split(x, num_outputs=2, axis=-1, _outputs=2)
        half = op.Concat(op.Neg(second), first, axis=-1)
        turned = op.Add(op.Mul(x, grid.cos), op.Mul(half, grid.sin))
        return op.Reshape(turned, [1, -1, self.size])

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, grid: PatchGrid):
        q = self._turn(op, self.q_proj(op, x), grid)
        k = self._turn(op, self.k_proj(op, x), grid)
        v = op.Reshape(self.v_proj(op, x), [1, -1, self.size])
        out = grid.attend(op, q, k, v, self.heads, self.head_dim**-0.5)
        return self.o_proj(op, op.Reshape(out, [-1, self.size]))


class PixtralLayer(nn.Module):
    def __init__(self, cfg: PixtralVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.attention_norm = RMSNorm(cfg.hidden_size, NORM_EPS, dtype)
        self.attention = PixtralAttention(cfg, dtype)
        self.ffn_norm = RMSNorm(cfg.hidden_size, NORM_EPS, dtype)
        self.feed_forward = GatedMLP(cfg, dtype)

    def forward(self, op, x, grid: PatchGrid):
        x = op.Add(x, self.attention(op, self.attention_norm(op, x), grid))
        return op.Add(x, self.feed_forward(op, self.ffn_norm(op, x)))


class PixtralTransformer(nn.Module):
    def __init__(self, cfg: PixtralVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.layers = nn.ModuleList(
            [PixtralLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        )

    def forward(self, op, x, grid: PatchGrid, states: list) -> None:
        for layer in self.layers:
            x = layer(op, x, grid)
            states.append(x)


class PixtralVisionModel(nn.Module):
    """Returns every hidden state of the patch sequence [patches, hidden] (ln_pre's output,
    then each layer's) and the images' patch grids; `num_hidden_layers` may stop short of the
    checkpoint's (the deepest feature layer a VLM reads)."""

    def __init__(self, cfg: PixtralVisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        size, patch = cfg.hidden_size, cfg.patch_size
        self.patch_conv = Conv2d(cfg.num_channels, size, patch, dtype, stride=patch, bias=False)
        self.ln_pre = RMSNorm(size, NORM_EPS, dtype)
        self.transformer = PixtralTransformer(cfg, dtype)
        self.cfg, self.dtype, self.ep = cfg, dtype, ep

    def forward(self, op, pixels, image_sizes) -> tuple[list[ir.Value], PatchGrid]:
        cfg, patch = self.cfg, self.cfg.patch_size
        conv = self.patch_conv(op, pixels)
        padded = op.Shape(conv, start=2, end=4)  # patch rows and columns of the padded batch
        flat = op.Reshape(op.Transpose(conv, perm=[0, 2, 3, 1]), [-1, cfg.hidden_size])
        grid = op.Div(image_sizes_of(op, pixels, image_sizes), patch)
        rows, cols = op.Gather(grid, 0, axis=1), op.Gather(grid, 1, axis=1)
        image, within = locate(op, op.Mul(rows, cols))
        width = op.Gather(cols, image)
        row, col = op.Div(within, width), op.Mod(within, width)
        padded_cols = op.Gather(padded, 1)
        source = op.Add(op.Mul(op.Add(op.Mul(image, op.Gather(padded, 0)), row), padded_cols), col)
        x = self.ln_pre(op, op.Gather(flat, source))
        cos, sin = self._angles(op, row, col)
        same = op.Equal(op.Unsqueeze(image, [1]), op.Unsqueeze(image, [0]))
        places = PatchGrid(rows, cols, cos, sin, BlockAttention(op, self.ep, same, self.dtype))
        states = [x]
        self.transformer(op, x, places, states)
        return states, places

    def _angles(self, op, row, col):
        """transformers' axial rope: rows turn by the even frequencies of the head, columns by
        the odd ones, [rows, columns] repeated over the head's halves."""
        dim = self.cfg.head_dim
        inv = 1.0 / self.cfg.rope_theta ** (np.arange(0, dim, 2, dtype=np.float32) / dim)

        def angles(position, freqs):
            table = op.Constant(value=ir.tensor(freqs.astype(np.float32)))
            return op.Mul(op.Unsqueeze(op.Cast(position, to=FLOAT), [1]), table)

        half = op.Concat(angles(row, inv[0::2]), angles(col, inv[1::2]), axis=-1)
        emb = op.Unsqueeze(op.Concat(half, half, axis=-1), [1])
        cos, sin = op.Cos(emb), op.Sin(emb)
        if self.dtype != FLOAT:
            cos, sin = op.Cast(cos, to=self.dtype), op.Cast(sin, to=self.dtype)
        return cos, sin

"""SAM's image encoder (transformers' SamVisionEncoder, which GOT-OCR 2.0 reuses as its
`vision_tower`): a patch Conv, learned absolute positions over the patch grid, pre-norm layers
attending within non-overlapping windows (the map padded with zeros at the bottom and right to
whole windows, the padding attended like any token) or, at `global_attn_indexes`, over the whole
grid, each with decomposed relative positions (per query, a row offset term and a column offset
term from `rel_pos_h` / `rel_pos_w`, added to the scores as a bias), then a convolutional neck
(a 1x1 and a 3x3 Conv, each followed by a LayerNorm over the channels) giving an NCHW map of
`output_channels`.

The windows and offset tables are fixed by the configured image size: the vision graph reads
images of that size only, as transformers does."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.components.conv2d import ChannelsFirstLayerNorm, Conv2d
from converter.components.encoder_attention import encoder_attention
from converter.components.mlp import PlainMLP
from converter.components.windows import Windows
from converter.config.reader import MAX_LAYERS, ConfigReader
from converter.config.vision import MAX_IMAGE_SIDE, check_int
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.vision_transformer import PatchEmbeddings

NECK_EPS = 1e-6  # the neck's LayerNorms keep transformers' default, whatever layer_norm_eps says


@dataclass(frozen=True)
class SamVisionConfig:
    hidden_size: int
    intermediate_size: int  # `mlp_dim`
    num_hidden_layers: int
    num_attention_heads: int
    output_channels: int  # the neck's
    num_channels: int
    image_size: int  # square images
    patch_size: int
    activation: str
    norm_eps: float
    qkv_bias: bool
    absolute_positions: bool  # `use_abs_pos`
    relative_positions: bool  # `use_rel_pos`
    window_size: int  # 0: every layer global
    global_layers: tuple[int, ...]  # `global_attn_indexes`
    mlp_bias: bool = True

    @property
    def grid(self) -> int:
        """The side of the patch grid."""
        return self.image_size // self.patch_size

    def window(self, layer: int) -> int:
        """The window side `layer` attends in (0: the whole grid)."""
        return 0 if layer in self.global_layers else self.window_size


def read_sam_vision(r: ConfigReader) -> SamVisionConfig:
    """SAM's `vision_config` keys (GOT-OCR 2.0's, SAM's own)."""
    hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
    if hidden % heads:
        raise ConfigError(
            f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
        )
    image, patch = r.int("image_size", hi=MAX_IMAGE_SIDE), r.int("patch_size", hi=MAX_IMAGE_SIDE)
    if patch > image:
        raise ConfigError(f"'patch_size' = {patch} is larger than 'image_size' = {image}")
    layers = r.int("num_hidden_layers", hi=MAX_LAYERS)
    indexes = r.get("global_attn_indexes", default=[])
    if not isinstance(indexes, list | tuple):
        raise ConfigError(f"'global_attn_indexes' must list layer indices, got {indexes!r}")
    return SamVisionConfig(
        hidden_size=hidden,
        intermediate_size=r.int("mlp_dim", hi=hidden * 64),
        num_hidden_layers=layers,
        num_attention_heads=heads,
        output_channels=r.int("output_channels"),
        num_channels=r.int("num_channels", default=3, hi=64),
        image_size=image,
        patch_size=patch,
        activation=r.str("hidden_act"),
        norm_eps=r.float("layer_norm_eps"),
        qkv_bias=r.bool("qkv_bias", True),
        absolute_positions=r.bool("use_abs_pos", True),
        relative_positions=r.bool("use_rel_pos", True),
        window_size=r.int("window_size", lo=0, hi=MAX_IMAGE_SIDE),
        global_layers=tuple(check_int(i, "global_attn_indexes", layers - 1, lo=0) for i in indexes),
    )


def offset_index(side: int) -> np.ndarray:
    """[side, side]: the row of a (2 side - 1)-row offset table for query i and key j."""
    return np.arange(side)[:, None] - np.arange(side)[None, :] + side - 1


class SamVisionAttention(nn.Module):
    """`qkv` (q, k, v packed along the width), the EP's kernel over [batch, tokens, hidden]
    with the decomposed relative positions as its bias, `proj`."""

    def __init__(self, cfg: SamVisionConfig, dtype: ir.DataType, side: int):
        super().__init__()
        hidden = cfg.hidden_size
        self.qkv = Linear(hidden, 3 * hidden, cfg.qkv_bias, dtype)
        self.proj = Linear(hidden, hidden, True, dtype)
        self.heads, self.side = cfg.num_attention_heads, side
        self.head_dim = hidden // self.heads
        self.scale = self.head_dim**-0.5
        if cfg.relative_positions:
            self.rel_pos_h = nn.Parameter([2 * side - 1, self.head_dim], dtype)
            self.rel_pos_w = nn.Parameter([2 * side - 1, self.head_dim], dtype)
        else:
            self.rel_pos_h = self.rel_pos_w = None

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def offsets(self, op, table):
        """[side (query), head_dim, side (key)]: the table's row for each offset."""
        rows = op.Gather(table, op.Constant(value=ir.tensor(offset_index(self.side))))
        return op.Transpose(rows, perm=[0, 2, 1])

    def bias(self, op, q):
        """[batch, heads, tokens, tokens]: the unscaled query's dot product with its row
        offset's entry of `rel_pos_h`, plus that with its column offset's of `rel_pos_w`."""
        s, heads = self.side, self.heads
        q = op.Transpose(op.Reshape(q, [-1, s, s, heads, self.head_dim]), perm=[0, 3, 1, 2, 4])
        by_row = op.MatMul(q, self.offsets(op, self.rel_pos_h))  # [b, heads, qh, qw, kh]
        by_column = op.MatMul(
            op.Transpose(q, perm=[0, 1, 3, 2, 4]), self.offsets(op, self.rel_pos_w)
        )
        by_column = op.Transpose(by_column, perm=[0, 1, 3, 2, 4])  # [b, heads, qh, qw, kw]
        bias = op.Add(op.Unsqueeze(by_row, [-1]), op.Unsqueeze(by_column, [-2]))
        return op.Reshape(bias, [-1, heads, s * s, s * s])

    def forward(self, op, x, kernel):
        q, k, v = op.Split(self.qkv(op, x), axis=-1, num_outputs=3, _outputs=3)
        bias = None if self.rel_pos_h is None else self.bias(op, q)
        return self.proj(op, kernel(op, q, k, v, self.heads, self.scale, bias))


class SamMlp(PlainMLP):
    in_name, out_name = "lin1", "lin2"


class SamVisionLayer(nn.Module):
    """x + attention(layer_norm1(x)) within the layer's windows (or over the whole grid), then
    x + mlp(layer_norm2(x)), on [batch, grid * grid, hidden]."""

    def __init__(self, cfg: SamVisionConfig, dtype: ir.DataType, layer: int):
        super().__init__()
        window = cfg.window(layer)
        self.windows = Windows(cfg.grid, cfg.grid, window, 0) if window else None
        self.layer_norm1 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.attn = SamVisionAttention(cfg, dtype, window or cfg.grid)
        self.layer_norm2 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = SamMlp(cfg, dtype)
        self.width = cfg.hidden_size

    def attend(self, op, x, kernel):
        if self.windows is None:
            return self.attn(op, x, kernel)
        windows = self.windows.split(op, x, self.width)
        return self.windows.join(op, self.attn(op, windows, kernel), self.width)

    def forward(self, op, x, kernel):
        x = op.Add(x, self.attend(op, self.layer_norm1(op, x), kernel))
        return op.Add(x, self.mlp(op, self.layer_norm2(op, x)))


class SamVisionNeck(nn.Module):
    def __init__(self, cfg: SamVisionConfig, dtype: ir.DataType):
        super().__init__()
        hidden, out = cfg.hidden_size, cfg.output_channels
        self.conv1 = Conv2d(hidden, out, 1, dtype, bias=False)
        self.layer_norm1 = ChannelsFirstLayerNorm(out, NECK_EPS, dtype)
        self.conv2 = Conv2d(out, out, 3, dtype, padding=1, bias=False)
        self.layer_norm2 = ChannelsFirstLayerNorm(out, NECK_EPS, dtype)

    def forward(self, op, x):
        x = self.layer_norm1(op, self.conv1(op, x))
        return self.layer_norm2(op, self.conv2(op, x))


class SamVisionEncoder(nn.Module):
    """pixel_values [batch, channels, image_size, image_size] -> the neck's map [batch,
    output_channels, grid, grid]."""

    def __init__(self, cfg: SamVisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.patch_embed = PatchEmbeddings(cfg, dtype)
        grid = cfg.grid
        shape = [1, grid, grid, cfg.hidden_size]
        self.pos_embed = nn.Parameter(shape, dtype) if cfg.absolute_positions else None
        self.layers = nn.ModuleList(
            [SamVisionLayer(cfg, dtype, i) for i in range(cfg.num_hidden_layers)]
        )
        self.neck = SamVisionNeck(cfg, dtype)
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # every layer's two norms read a residual sum but the first layer's layer_norm1, which
        # reads the patches plus the positions (if any)
        fused = 2 * self.cfg.num_hidden_layers - 1 + (self.pos_embed is not None)
        return {"skip_norms": fused if plan.has(SKIP_NORM) else 0}

    def forward(self, op, pixels):
        x = self.patch_embed(op, pixels)
        if self.pos_embed is not None:
            x = op.Add(x, op.Reshape(self.pos_embed, [1, -1, self.cfg.hidden_size]))
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        for layer in self.layers:
            x = layer(op, x, kernel)
        grid = self.cfg.grid
        x = op.Transpose(op.Reshape(x, [0, grid, grid, self.cfg.hidden_size]), perm=[0, 3, 1, 2])
        return self.neck(op, x)

"""Swin V2: Swin's windows and stages with post-norm blocks (x + layernorm_before(attention),
x + layernorm_after(MLP)), cosine attention scaled per head by exp(logit_scale) (at most 100),
a continuous relative-position bias (an MLP over log-spaced offsets, 16 * sigmoid), and patch
merging that projects before it norms.

Windows follow transformers: a block's window and shift come from the stage's resolution as
the model was built (the patch grid rounded down, halved per stage), clamped to it; the map at
run time is padded to whole windows. As in transformers the shifted-window mask is added twice.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.conv2d import Placeholder
from converter.components.windows import Windows, relative_position_index
from converter.config.vision import MAX_IMAGE_SIDE, int_list
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.swin import (
    MASKED,
    SwinAttention,
    SwinBody,
    SwinEncoder,
    SwinImageModel,
    SwinLayer,
    SwinPatchMerging,
    SwinRules,
    SwinSelfAttention,
    SwinStage,
    swin_family,
)

MAX_LOGIT_SCALE = math.log(100.0)
CPB_HIDDEN = 512  # the continuous position bias MLP's width


class Swinv2Rules(SwinRules):
    """Swin's keys and `pretrained_window_sizes` (per stage; 0: the block's own window)."""

    def read_extra(self, r):
        stages = len(int_list(r, "depths"))
        sizes = int_list(r, "pretrained_window_sizes", hi=MAX_IMAGE_SIDE, lo=0)
        if len(sizes) < stages:  # transformers reads one per stage and ignores the rest
            raise ConfigError(f"'pretrained_window_sizes' lists fewer than the {stages} stages")
        return {**super().read_extra(r), "pretrained_windows": sizes[:stages]}


def coords_table(side: int, pretrained: int) -> np.ndarray:
    """[1, 2 side - 1, 2 side - 1, 2] offsets normalized to [-8, 8] by the pretrained (else the
    block's) window, then sign * log2(1 + |x|) / 3, as transformers computes it in float32."""
    offsets = np.arange(-(side - 1), side, dtype=np.float32)
    table = np.stack(np.meshgrid(offsets, offsets, indexing="ij")).transpose(1, 2, 0)[None]
    if pretrained > 0:
        table = table / np.float32(pretrained - 1)
    elif side > 1:
        table = table / np.float32(side - 1)
    table = table * np.float32(8)
    log2 = np.log2(np.abs(table) + np.float32(1.0)) / np.float32(math.log2(8))
    return (np.sign(table) * log2).astype(np.float32)


class Swinv2SelfAttention(SwinSelfAttention):
    """Cosine attention (queries normed and scaled per head, keys normed, kernel scale 1) with
    the bias of `continuous_position_bias_mlp` (Linear, ReLU, Linear); no key bias."""

    masked = 2 * MASKED  # transformers adds the shifted-window mask twice

    def __init__(self, cfg, dtype, stage, windows):
        super().__init__(cfg, dtype, stage, windows)
        self.logit_scale = nn.Parameter([self.heads, 1, 1], dtype)
        self.head_dim, self.scale = cfg.widths[stage] // self.heads, 1.0

    def biases(self, cfg):
        return cfg.qkv_bias, False, cfg.qkv_bias

    def make_position_bias(self, cfg, dtype, stage):
        self.continuous_position_bias_mlp = nn.ModuleList(
            [
                Linear(2, CPB_HIDDEN, True, dtype),
                Placeholder(lambda op, x: op.Relu(x)),
                Linear(CPB_HIDDEN, self.heads, False, dtype),
            ]
        )
        side = self.windows.size
        self.table = coords_table(side, cfg.extra["pretrained_windows"][stage])
        self.index = relative_position_index(side, side)

    def position_bias(self, op):
        table = op.Constant(value=ir.tensor(self.table.astype(self.dtype.numpy())))
        for step in self.continuous_position_bias_mlp:
            table = step(op, table)
        bias = self.gathered(op, op.Reshape(table, [-1, self.heads]))
        return op.Mul(op.Sigmoid(bias), 16.0)

    def unit(self, op, x, per_head=None):
        """x [windows, tokens, width] with each head's vector scaled to length 1 (then by
        `per_head` [heads, 1]); in float32, where torch's 1e-12 floor on the length holds (a
        padded token's key is all zeros)."""
        heads = op.Reshape(x, [0, 0, self.heads, self.head_dim])
        wide = self.dtype != ir.DataType.FLOAT
        heads = op.Cast(heads, to=ir.DataType.FLOAT) if wide else heads
        heads = op.Div(heads, op.Max(op.ReduceL2(heads, [-1], keepdims=1), 1e-12))
        heads = op.Cast(heads, to=self.dtype) if wide else heads
        if per_head is not None:
            heads = op.Mul(heads, per_head)
        return op.Reshape(heads, [0, 0, -1])

    def attend(self, op, q, k, v, kernel, batch):
        scale = op.Exp(op.Min(op.Reshape(self.logit_scale, [self.heads, 1]), MAX_LOGIT_SCALE))
        q, k = self.unit(op, q, scale), self.unit(op, k)
        return kernel(op, q, k, v, self.heads, self.scale, self.bias(op, batch))


class Swinv2Attention(SwinAttention):
    self_attention_cls = Swinv2SelfAttention


def built_windows(cfg, stage: int, block: int, rows: int, columns: int) -> Windows:
    """Swin V2's windows: window and shift from the stage's build-time resolution (its rows)."""
    side, (grid_rows, _) = cfg.extra["window_size"], cfg.grid
    built_rows = grid_rows // 2**stage
    if built_rows < 1:
        raise ConfigError(f"stage {stage} has no rows left at this 'image_size'")
    shift = side // 2 if block % 2 and built_rows > side else 0
    return Windows(rows, columns, min(built_rows, side), shift)


class Swinv2Layer(SwinLayer):
    """Post-norm block: x + layernorm_before(attention(x)), then x + layernorm_after(MLP(x))."""

    attention_cls = Swinv2Attention

    def make_windows(self, cfg, stage, block, rows, columns):
        return built_windows(cfg, stage, block, rows, columns)

    def forward(self, op, x, kernel, batch):
        x = op.Add(x, self.layernorm_before(op, self.attend(op, x, kernel, batch)))
        return op.Add(x, self.layernorm_after(op, self.mlp(op, x)))


class Swinv2PatchMerging(SwinPatchMerging):
    """Swin's 2x2 gathering, `reduction` to twice the width, then `norm`."""

    norm_width = 2

    def forward(self, op, x):
        return self.norm(op, self.reduction(op, self.gather(op, x)))


class Swinv2Stage(SwinStage):
    layer_cls = Swinv2Layer
    merging_cls = Swinv2PatchMerging


class Swinv2Encoder(SwinEncoder):
    stage_cls = Swinv2Stage


class Swinv2Body(SwinBody):
    encoder_cls = Swinv2Encoder

    def expected_fusions(self, plan):
        # post-norm blocks: only the last block's sum feeds a norm (the final layernorm)
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}


class Swinv2ImageModel(SwinImageModel):
    body_cls = Swinv2Body
    body_name = "swinv2"


FAMILIES = [
    swin_family(
        "swinv2",
        Swinv2ImageModel,
        "Swin with post-norm blocks, cosine attention and a continuous position-bias MLP",
        ("microsoft/swinv2-tiny-patch4-window8-256",),
        Swinv2Rules(),
    ),
]

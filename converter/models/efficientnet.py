"""EfficientNet: a strided stem, stages of MBConv blocks (1x1 expansion, depthwise conv,
squeeze-and-excitation, 1x1 projection, a residual within a stage) whose widths and repeats scale
with `width_coefficient` and `depth_coefficient`, a last 1x1 conv and a mean (or max) pool."""

from __future__ import annotations

import math

from onnxscript import nn

from converter.components import activation
from converter.components.conv2d import BatchNorm2d, Conv2d
from converter.components.pooling import global_mean, pad
from converter.config.convnet import ConvNetRules, make_divisible, stage_list
from converter.errors import ConfigError
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH


class EfficientNetRules(ConvNetRules):
    def read_extra(self, r):
        stages = len(stage_list(r, "in_channels", int))
        extra = {
            "width_coefficient": r.float("width_coefficient", default=2.0),
            "depth_coefficient": r.float("depth_coefficient", default=3.1),
            "depth_divisor": r.int("depth_divisor", default=8),
            "squeeze_expansion_ratio": r.float("squeeze_expansion_ratio", default=0.25),
            "hidden_act": r.str("hidden_act", default="swish"),
            "pooling_type": r.str("pooling_type", default="mean"),
            "eps": r.float("batch_norm_eps", default=1e-3),
            "depthwise_padding": tuple(r.get("depthwise_padding", default=())),
        }
        for key in ("in_channels", "out_channels", "kernel_sizes", "strides", "num_block_repeats"):
            extra[key] = stage_list(r, key, int, stages)
        extra["expand_ratios"] = stage_list(r, "expand_ratios", float, stages)
        if extra["pooling_type"] not in ("mean", "max"):
            r.refuse("pooling_type", "transformers pools by 'mean' or 'max'")
        if not all(isinstance(i, int) for i in extra["depthwise_padding"]):
            raise ConfigError("'depthwise_padding' must list block indices")
        return extra

    def hidden_size(self, r, extra):
        width = round_filters(extra, 1280)
        if r.int("hidden_dim", default=width) != width:
            raise ConfigError(
                f"'hidden_dim' = {r.raw['hidden_dim']} differs from the last convolution's "
                f"{width} channels (transformers' top BatchNorm would not load)"
            )
        return width


def round_filters(extra, channels: int) -> int:
    return make_divisible(channels * extra["width_coefficient"], extra["depth_divisor"])


def blocks(extra):
    """(in, out, stride, kernel, expand ratio, residual, adjust padding) of every block."""
    found = []
    for i, repeats in enumerate(extra["num_block_repeats"]):
        in_dim = round_filters(extra, extra["in_channels"][i])
        out_dim = round_filters(extra, extra["out_channels"][i])
        for j in range(math.ceil(extra["depth_coefficient"] * repeats)):
            adjust = len(found) not in extra["depthwise_padding"]
            stride = extra["strides"][i] if j == 0 else 1
            kernel, ratio = extra["kernel_sizes"][i], extra["expand_ratios"][i]
            found.append(
                (in_dim if j == 0 else out_dim, out_dim, stride, kernel, ratio, j > 0, adjust)
            )
    return found


class Embeddings(nn.Module):
    """Zero padding after the bottom and right edges, a valid stride-2 conv, BatchNorm, act."""

    def __init__(self, cfg, dtype):
        super().__init__()
        width = round_filters(cfg.extra, 32)
        self.convolution = Conv2d(cfg.num_channels, width, 3, dtype, stride=2, bias=False)
        self.batchnorm = BatchNorm2d(width, dtype, cfg.extra["eps"])
        self.act = cfg.extra["hidden_act"]

    def forward(self, op, x):
        x = self.convolution(op, pad(op, x, 0, 0, 1, 1))
        return activation(op, self.act, self.batchnorm(op, x))


class Expansion(nn.Module):
    def __init__(self, extra, dtype, in_dim, out_dim):
        super().__init__()
        self.expand_conv = Conv2d(in_dim, out_dim, 1, dtype, bias=False)
        self.expand_bn = BatchNorm2d(out_dim, dtype, extra["eps"])
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        return activation(op, self.act, self.expand_bn(op, self.expand_conv(op, x)))


class Depthwise(nn.Module):
    """Stride 2: zeros one fewer before than after (`adjust`) or as many, then a valid conv;
    stride 1: torch's "same" padding."""

    def __init__(self, extra, dtype, dim, stride, kernel, adjust):
        super().__init__()
        self.depthwise_conv = Conv2d(dim, dim, kernel, dtype, stride=stride, groups=dim, bias=False)
        self.depthwise_norm = BatchNorm2d(dim, dtype, extra["eps"])
        half = kernel // 2
        if stride == 2:
            self.pads = (half - 1, half - 1, half, half) if adjust else (half,) * 4
        else:
            self.pads = ((kernel - 1) // 2,) * 2 + (kernel // 2,) * 2
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        x = self.depthwise_conv(op, pad(op, x, *self.pads))
        return activation(op, self.act, self.depthwise_norm(op, x))


class SqueezeExcite(nn.Module):
    """x times sigmoid(expand(act(reduce(mean of x over the map))))."""

    def __init__(self, extra, dtype, dim, squeezed):
        super().__init__()
        self.reduce = Conv2d(dim, squeezed, 1, dtype)
        self.expand = Conv2d(squeezed, dim, 1, dtype)
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        scale = activation(op, self.act, self.reduce(op, global_mean(op, x, keep=True)))
        return op.Mul(x, op.Sigmoid(self.expand(op, scale)))


class Projection(nn.Module):
    def __init__(self, extra, dtype, in_dim, out_dim, residual):
        super().__init__()
        self.project_conv = Conv2d(in_dim, out_dim, 1, dtype, bias=False)
        self.project_bn = BatchNorm2d(out_dim, dtype, extra["eps"])
        self.residual = residual

    def forward(self, op, x, block_input):
        x = self.project_bn(op, self.project_conv(op, x))
        return op.Add(x, block_input) if self.residual else x


class Block(nn.Module):
    def __init__(self, extra, dtype, spec):
        super().__init__()
        in_dim, out_dim, stride, kernel, ratio, residual, adjust = spec
        inner = int(in_dim * ratio)
        self.expansion = Expansion(extra, dtype, in_dim, inner) if ratio != 1 else None
        self.depthwise_conv = Depthwise(extra, dtype, inner, stride, kernel, adjust)
        squeezed = max(1, int(in_dim * extra["squeeze_expansion_ratio"]))
        self.squeeze_excite = SqueezeExcite(extra, dtype, inner, squeezed)
        self.projection = Projection(extra, dtype, inner, out_dim, residual)

    def forward(self, op, x):
        y = x if self.expansion is None else self.expansion(op, x)
        y = self.squeeze_excite(op, self.depthwise_conv(op, y))
        return self.projection(op, y, x)


class Encoder(nn.Module):
    """The blocks, then (`top`) a 1x1 conv to hidden_size with BatchNorm and activation."""

    def __init__(self, cfg, dtype, top: bool = True):
        super().__init__()
        extra = cfg.extra
        specs = blocks(extra)
        self.blocks = nn.ModuleList([Block(extra, dtype, spec) for spec in specs])
        self.top_conv = self.top_bn = None
        if top:
            self.top_conv = Conv2d(specs[-1][1], cfg.hidden_size, 1, dtype, bias=False)
            self.top_bn = BatchNorm2d(cfg.hidden_size, dtype, extra["eps"])
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        for block in self.blocks:
            x = block(op, x)
        if self.top_conv is None:
            return x
        return activation(op, self.act, self.top_bn(op, self.top_conv(op, x)))


class EfficientNetBody(ConvNetBody):
    """The pooler is transformers' AvgPool2d (MaxPool2d) with a `hidden_dim`-wide window and
    ceil_mode: over any map it can take, the mean (max) of the whole map. `top` False: no
    top conv (ALIGN's tower ends at its last block)."""

    top = True

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.embeddings = Embeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype, self.top)

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, self.embeddings(op, pixel_values))
        size = self.cfg.hidden_size
        if self.cfg.extra["pooling_type"] == "mean":
            pooled = global_mean(op, hidden)
        else:
            pooled = op.ReduceMax(hidden, [2, 3], keepdims=0)
        return Features(hidden, [BATCH, size, *FEATURE_DIMS], pooled, [BATCH, size])


class EfficientNetModel(VisionEncoderModel):
    body_cls = EfficientNetBody
    body_name = "efficientnet"


FAMILIES = [
    Family(
        "efficientnet",
        EfficientNetModel,
        "MBConv blocks with squeeze-and-excitation, compound-scaled widths and depths",
        ("google/efficientnet-b0", "google/efficientnet-b7"),
        rules=EfficientNetRules(),
        task="image-feature-extraction",
        category="vision",
        unused=CONVNET_UNUSED,
        prefix="efficientnet.",
    ),
]

"""MobileNetV2: a stem, 16 inverted residual blocks (1x1 expansion, 3x3 depthwise, 1x1
projection) with channel counts scaled by `depth_multiplier`, a last 1x1 convolution and a mean
over the map; TensorFlow's "same" padding where `tf_padding` says."""

from __future__ import annotations

from onnxscript import nn

from converter.components.conv_layers import ConvNorm
from converter.components.pooling import global_mean
from converter.config.convnet import ConvNetConfig, ConvNetRules, make_divisible
from converter.models.convnet import CONVNET_UNUSED, MAP_DIMS, ConvNetBody
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH

# output channels of the stem and each block, and the stride of each block's depthwise conv
CHANNELS = (16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160, 320)
STRIDES = (2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1)


class MobileNetV2Rules(ConvNetRules):
    def read_extra(self, r):
        extra = {
            "depth_multiplier": r.float("depth_multiplier", default=1.0),
            "depth_divisible_by": r.int("depth_divisible_by", default=8),
            "min_depth": r.int("min_depth", default=8),
            "expand_ratio": r.float("expand_ratio", default=6.0),
            "output_stride": r.int("output_stride", default=32),
            "first_layer_is_expansion": r.bool("first_layer_is_expansion", True),
            "finegrained_output": r.bool("finegrained_output", True),
            "hidden_act": r.str("hidden_act", default="relu6"),
            "tf_padding": r.bool("tf_padding", True),
            "eps": r.float("layer_norm_eps", default=1e-3),
        }
        return extra

    def hidden_size(self, r, extra):
        if extra["finegrained_output"] and extra["depth_multiplier"] < 1.0:
            return 1280
        return depth(extra, 1280)


def depth(extra, channels: int) -> int:
    """`channels` scaled by the depth multiplier and rounded (apply_depth_multiplier)."""
    scaled = round(channels * extra["depth_multiplier"])
    return make_divisible(scaled, extra["depth_divisible_by"], extra["min_depth"])


def conv(extra, dtype, in_channels, out_channels, kernel, **kwargs):
    """MobileNetV2ConvLayer: bias-free conv, BatchNorm and (unless act=None) the activation."""
    act = kwargs.pop("act", extra["hidden_act"])
    tf_same = extra["tf_padding"]
    padding = 0 if tf_same else (kernel - 1) // 2 * kwargs.get("dilation", 1)
    return ConvNorm(
        in_channels,
        out_channels,
        kernel,
        dtype,
        padding=padding,
        eps=extra["eps"],
        act=act,
        tf_same=tf_same,
        **kwargs,
    )


class InvertedResidual(nn.Module):
    def __init__(self, extra, dtype, in_channels, out_channels, stride, dilation=1):
        super().__init__()
        expanded = make_divisible(
            round(in_channels * extra["expand_ratio"]),
            extra["depth_divisible_by"],
            extra["min_depth"],
        )
        self.expand_1x1 = conv(extra, dtype, in_channels, expanded, 1)
        self.conv_3x3 = conv(
            extra, dtype, expanded, expanded, 3, stride=stride, groups=expanded, dilation=dilation
        )
        self.reduce_1x1 = conv(extra, dtype, expanded, out_channels, 1, act=None)
        self.residual = stride == 1 and in_channels == out_channels

    def forward(self, op, x):
        y = self.reduce_1x1(op, self.conv_3x3(op, self.expand_1x1(op, x)))
        return op.Add(x, y) if self.residual else y


class Stem(nn.Module):
    def __init__(self, extra, dtype, in_channels, expanded, out_channels):
        super().__init__()
        self.first_conv = conv(extra, dtype, in_channels, expanded, 3, stride=2)
        extra_layer = not extra["first_layer_is_expansion"]
        self.expand_1x1 = conv(extra, dtype, expanded, expanded, 1) if extra_layer else None
        self.conv_3x3 = conv(extra, dtype, expanded, expanded, 3, groups=expanded)
        self.reduce_1x1 = conv(extra, dtype, expanded, out_channels, 1, act=None)

    def forward(self, op, x):
        x = self.first_conv(op, x)
        if self.expand_1x1 is not None:
            x = self.expand_1x1(op, x)
        return self.reduce_1x1(op, self.conv_3x3(op, x))


class MobileNetV2Body(ConvNetBody):
    def __init__(self, cfg: ConvNetConfig, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        extra = cfg.extra
        channels = [depth(extra, c) for c in CHANNELS]
        self.conv_stem = Stem(extra, dtype, cfg.num_channels, depth(extra, 32), channels[0])
        blocks, current, dilation = [], 2, 1
        for i, stride in enumerate(STRIDES):
            # past output_stride, depthwise convs dilate instead of striding
            if current == extra["output_stride"]:
                block_stride, block_dilation = 1, dilation
                dilation *= stride
            else:
                block_stride, block_dilation = stride, 1
                current *= stride
            blocks.append(
                InvertedResidual(
                    extra, dtype, channels[i], channels[i + 1], block_stride, block_dilation
                )
            )
        self.layer = nn.ModuleList(blocks)
        self.conv_1x1 = conv(extra, dtype, channels[-1], cfg.hidden_size, 1)

    def forward(self, op, pixel_values) -> Features:
        x = self.conv_stem(op, pixel_values)
        for block in self.layer:
            x = block(op, x)
        hidden = self.conv_1x1(op, x)
        size = self.cfg.hidden_size
        pooled = global_mean(op, hidden) if self.pooled else None
        return Features(hidden, [BATCH, size, *MAP_DIMS], pooled, [BATCH, size])


class MobileNetV2Model(VisionEncoderModel):
    body_cls = MobileNetV2Body
    body_name = "mobilenet_v2"


FAMILIES = [
    Family(
        "mobilenet_v2",
        MobileNetV2Model,
        "inverted residual blocks of depthwise convolutions, TensorFlow 'same' padding",
        ("google/mobilenet_v2_1.0_224",),
        rules=MobileNetV2Rules(),
        task="image-feature-extraction",
        category="vision",
        unused=CONVNET_UNUSED,
        prefix="mobilenet_v2.",
    ),
]

"""MobileNetV1: a strided stem, then 13 pairs of a 3x3 depthwise and a 1x1 pointwise
convolution (channels doubling where the stride is 2, scaled by `depth_multiplier`), and a mean
over the map; TensorFlow's "same" padding where `tf_padding` says."""

from __future__ import annotations

from onnxscript import nn

from converter.components.conv_layers import ConvNorm
from converter.components.pooling import global_mean
from converter.config.convnet import ConvNetRules
from converter.models.convnet import CONVNET_UNUSED, MAP_DIMS, ConvNetBody
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH

STRIDES = (1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1)


class MobileNetV1Rules(ConvNetRules):
    def read_extra(self, r):
        return {
            "depth_multiplier": r.float("depth_multiplier", default=1.0),
            "min_depth": r.int("min_depth", default=8),
            "hidden_act": r.str("hidden_act", default="relu6"),
            "tf_padding": r.bool("tf_padding", True),
            "eps": r.float("layer_norm_eps", default=1e-3),
        }

    def hidden_size(self, r, extra):
        return channels(extra)[-1]


def channels(extra) -> list[int]:
    """The stem's width, then each pair's output width."""
    depth = 32
    widths = [max(int(depth * extra["depth_multiplier"]), extra["min_depth"])]
    for i, stride in enumerate(STRIDES):
        if stride == 2 or i == 0:
            depth *= 2
        widths.append(max(int(depth * extra["depth_multiplier"]), extra["min_depth"]))
    return widths


def conv(extra, dtype, in_channels, out_channels, kernel, stride=1, groups=1):
    """MobileNetV1ConvLayer: bias-free conv, BatchNorm and the activation."""
    tf_same = extra["tf_padding"]
    return ConvNorm(
        in_channels,
        out_channels,
        kernel,
        dtype,
        stride=stride,
        padding=0 if tf_same else (kernel - 1) // 2,
        groups=groups,
        eps=extra["eps"],
        act=extra["hidden_act"],
        tf_same=tf_same,
    )


class MobileNetV1Body(ConvNetBody):
    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        extra, widths = cfg.extra, channels(cfg.extra)
        self.conv_stem = conv(extra, dtype, cfg.num_channels, widths[0], 3, stride=2)
        layers = []
        for i, stride in enumerate(STRIDES):
            width = widths[i]
            layers.append(conv(extra, dtype, width, width, 3, stride=stride, groups=width))
            layers.append(conv(extra, dtype, width, widths[i + 1], 1))
        self.layer = nn.ModuleList(layers)

    def forward(self, op, pixel_values) -> Features:
        x = self.conv_stem(op, pixel_values)
        for layer in self.layer:
            x = layer(op, x)
        size = self.cfg.hidden_size
        pooled = global_mean(op, x) if self.pooled else None
        return Features(x, [BATCH, size, *MAP_DIMS], pooled, [BATCH, size])


class MobileNetV1Model(VisionEncoderModel):
    body_cls = MobileNetV1Body
    body_name = "mobilenet_v1"


FAMILIES = [
    Family(
        "mobilenet_v1",
        MobileNetV1Model,
        "depthwise and pointwise convolution pairs, TensorFlow 'same' padding",
        ("google/mobilenet_v1_1.0_224",),
        rules=MobileNetV1Rules(),
        task="image-feature-extraction",
        category="vision",
        unused=CONVNET_UNUSED,
        prefix="mobilenet_v1.",
    ),
]

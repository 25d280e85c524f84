"""MobileNet V1 (depthwise-separable Convs) and V2 (inverted residuals: 1x1 expansion,
depthwise 3x3, linear 1x1 reduction, added to the input where shapes allow), every Conv with
BatchNorm (eps = layer_norm_eps) and ReLU6 by default, TensorFlow "SAME" padding when
`tf_padding` (the graph pads for whatever size comes); the pooler averages the last map.
Channel counts follow transformers' depth_multiplier rounding."""

from __future__ import annotations

from onnxscript import nn

from converter.components import activation
from converter.components.conv2d import BatchNorm2d, Conv2d
from converter.config.vision import VisionRules
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH
from converter.tasks.image_encoding import HEIGHT, WIDTH

V1_STRIDES = (1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1)
V2_CHANNELS = (16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160, 320)
V2_STRIDES = (2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1)


def make_divisible(value: float, divisor: int, min_value: int) -> int:
    """transformers' rounding of a channel count to a multiple of `divisor` (never more than
    10% below `value`)."""
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class MobileNetRules(VisionRules):
    """depth_multiplier, min_depth, tf_padding, layer_norm_eps (BatchNorm's), hidden_act."""

    eps_default = 1e-3

    def image_size(self, r):
        return None

    def patch_size(self, r):
        return None

    def common(self, r) -> dict:
        return {
            "multiplier": r.float("depth_multiplier", default=1.0),
            "min_depth": r.int("min_depth", default=8),
            "tf_padding": r.bool("tf_padding", True),
        }


class MobileNetV1Rules(MobileNetRules):
    def stages(self, r):
        _, pairs = v1_plan(r.float("depth_multiplier", default=1.0), r.int("min_depth", default=8))
        width = pairs[-1][1]
        return (width,), (len(pairs),), (), (width,)

    def read_extra(self, r):
        return self.common(r)


class MobileNetV2Rules(MobileNetRules):
    def stages(self, r):
        extra = self.read_extra(r)
        return (extra["output_channels"],), (len(V2_STRIDES),), (), (extra["output_channels"],)

    def read_extra(self, r):
        extra = self.common(r)
        divisor = r.int("depth_divisible_by", default=8)
        extra["divisor"] = divisor
        output_stride = r.int("output_stride", default=32)
        if output_stride not in (8, 16, 32):
            r.refuse("output_stride", "MobileNetV2's output stride is 8, 16 or 32")

        def scaled(channels: int) -> int:
            return make_divisible(
                round(channels * extra["multiplier"]), divisor, extra["min_depth"]
            )

        finegrained = r.bool("finegrained_output", True) and extra["multiplier"] < 1.0
        return {
            **extra,
            "channels": tuple(scaled(c) for c in V2_CHANNELS),
            "stem_channels": scaled(32),
            "output_channels": 1280 if finegrained else scaled(1280),
            "expand_ratio": r.float("expand_ratio", default=6.0),
            "first_layer_is_expansion": r.bool("first_layer_is_expansion", True),
            "output_stride": output_stride,
        }


def v1_plan(multiplier: float, min_depth: int) -> tuple[int, list[tuple[int, int]]]:
    """V1's stem width and the (input, output) channels of its 13 depthwise-separable pairs."""
    depth = 32
    stem = channels = max(int(depth * multiplier), min_depth)
    pairs = []
    for i, stride in enumerate(V1_STRIDES):
        inputs = channels
        if stride == 2 or i == 0:
            depth *= 2
            channels = max(int(depth * multiplier), min_depth)
        pairs.append((inputs, channels))
    return stem, pairs


class MobileNetConvLayer(nn.Module):
    """`convolution` (no bias), `normalization`, then the activation (ReLU6 by default) unless
    `act` is False."""

    def __init__(
        self, cfg, dtype, inputs, outputs, kernel, stride=1, groups=1, dilation=1, act=True
    ):
        super().__init__()
        same = cfg.extra["tf_padding"]
        padding = 0 if same else (kernel - 1) // 2 * dilation
        self.convolution = Conv2d(
            inputs,
            outputs,
            kernel,
            dtype,
            stride=stride,
            padding=padding,
            groups=groups,
            bias=False,
            dilation=dilation,
            same=same,
        )
        self.normalization = BatchNorm2d(outputs, dtype, cfg.norm_eps)
        self.act = cfg.activation if act else None

    def forward(self, op, x):
        x = self.normalization(op, self.convolution(op, x))
        if self.act is None:
            return x
        return op.Clip(x, 0.0, 6.0) if self.act == "relu6" else activation(op, self.act, x)


class MobileNetBody(nn.Module):
    """The last map [batch, channels, rows, columns] and its average [batch, channels]."""

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__()
        self.cfg = cfg

    def image_dims(self):
        return HEIGHT, WIDTH

    def features(self, op, pixel_values):
        raise NotImplementedError

    def forward(self, op, pixel_values) -> Features:
        hidden = self.features(op, pixel_values)
        pooled = op.Flatten(op.GlobalAveragePool(hidden), axis=1)
        size = self.cfg.hidden_size
        return Features(hidden, [BATCH, size, *FEATURE_DIMS], pooled, [BATCH, size])


class MobileNetV1Body(MobileNetBody):
    """`conv_stem` (3x3 stride 2), then `layer`: 13 pairs of a depthwise 3x3 and a 1x1 Conv."""

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled)
        stem, pairs = v1_plan(cfg.extra["multiplier"], cfg.extra["min_depth"])
        self.conv_stem = MobileNetConvLayer(cfg, dtype, cfg.num_channels, stem, 3, 2)
        layers = []
        for (inputs, outputs), stride in zip(pairs, V1_STRIDES, strict=True):
            layers.append(MobileNetConvLayer(cfg, dtype, inputs, inputs, 3, stride, inputs))
            layers.append(MobileNetConvLayer(cfg, dtype, inputs, outputs, 1))
        self.layer = nn.ModuleList(layers)

    def features(self, op, pixel_values):
        x = self.conv_stem(op, pixel_values)
        for layer in self.layer:
            x = layer(op, x)
        return x


class InvertedResidual(nn.Module):
    """expand_1x1, conv_3x3 (depthwise), reduce_1x1 (linear), plus the input when the stride is
    1 and the width unchanged."""

    def __init__(self, cfg, dtype, inputs, outputs, stride, dilation=1):
        super().__init__()
        extra = cfg.extra
        wide = round(inputs * extra["expand_ratio"])
        expanded = make_divisible(wide, extra["divisor"], extra["min_depth"])
        self.expand_1x1 = MobileNetConvLayer(cfg, dtype, inputs, expanded, 1)
        self.conv_3x3 = MobileNetConvLayer(
            cfg, dtype, expanded, expanded, 3, stride, expanded, dilation
        )
        self.reduce_1x1 = MobileNetConvLayer(cfg, dtype, expanded, outputs, 1, act=False)
        self.residual = stride == 1 and inputs == outputs

    def forward(self, op, x):
        out = self.reduce_1x1(op, self.conv_3x3(op, self.expand_1x1(op, x)))
        return op.Add(x, out) if self.residual else out


class MobileNetV2Stem(nn.Module):
    """`first_conv` (3x3 stride 2), `expand_1x1` (left out when `first_layer_is_expansion`),
    `conv_3x3` (depthwise) and `reduce_1x1` (linear), all at the stem's width."""

    def __init__(self, cfg, dtype):
        super().__init__()
        stem, first = cfg.extra["stem_channels"], cfg.extra["channels"][0]
        self.first_conv = MobileNetConvLayer(cfg, dtype, cfg.num_channels, stem, 3, 2)
        expanding = not cfg.extra["first_layer_is_expansion"]
        self.expand_1x1 = MobileNetConvLayer(cfg, dtype, stem, stem, 1) if expanding else None
        self.conv_3x3 = MobileNetConvLayer(cfg, dtype, stem, stem, 3, 1, stem)
        self.reduce_1x1 = MobileNetConvLayer(cfg, dtype, stem, first, 1, act=False)

    def forward(self, op, x):
        x = self.first_conv(op, x)
        if self.expand_1x1 is not None:
            x = self.expand_1x1(op, x)
        return self.reduce_1x1(op, self.conv_3x3(op, x))


class MobileNetV2Body(MobileNetBody):
    """`conv_stem`, 16 inverted residuals (`layer`; past `output_stride` strides become
    dilations), `conv_1x1` to the output width."""

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled)
        extra = cfg.extra
        channels = extra["channels"]
        self.conv_stem = MobileNetV2Stem(cfg, dtype)
        layers, stride_so_far, dilation = [], 2, 1
        for i, stride in enumerate(V2_STRIDES):
            if stride_so_far == extra["output_stride"]:
                layer_stride, layer_dilation = 1, dilation
                dilation *= stride
            else:
                layer_stride, layer_dilation = stride, 1
                stride_so_far *= stride
            layers.append(
                InvertedResidual(
                    cfg, dtype, channels[i], channels[i + 1], layer_stride, layer_dilation
                )
            )
        self.layer = nn.ModuleList(layers)
        self.conv_1x1 = MobileNetConvLayer(cfg, dtype, channels[-1], extra["output_channels"], 1)

    def features(self, op, pixel_values):
        x = self.conv_stem(op, pixel_values)
        for layer in self.layer:
            x = layer(op, x)
        return self.conv_1x1(op, x)


class MobileNetV1ImageModel(VisionEncoderModel):
    body_cls = MobileNetV1Body
    body_name = "mobilenet_v1"


class MobileNetV2ImageModel(VisionEncoderModel):
    body_cls = MobileNetV2Body
    body_name = "mobilenet_v2"


def mobilenet_family(model_type, model_class, notes, examples, rules) -> Family:
    return Family(
        model_type,
        model_class,
        notes,
        examples,
        rules=rules,
        task="image-feature-extraction",
        category="vision",
        unused=(r".*num_batches_tracked",),
        prefix=f"{model_class.body_name}.",
    )


FAMILIES = [
    mobilenet_family(
        "mobilenet_v1",
        MobileNetV1ImageModel,
        "depthwise-separable Convs with BatchNorm and ReLU6, TensorFlow SAME padding",
        ("google/mobilenet_v1_1.0_224",),
        MobileNetV1Rules(),
    ),
    mobilenet_family(
        "mobilenet_v2",
        MobileNetV2ImageModel,
        "inverted residuals with BatchNorm and ReLU6, TensorFlow SAME padding",
        ("google/mobilenet_v2_1.0_224",),
        MobileNetV2Rules(),
    ),
]

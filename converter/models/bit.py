"""BiT (Big Transfer): a ResNet v2 whose convolutions standardize their weights (each filter
to zero mean and unit variance, folded into the weight when the package is written) and whose
norms are GroupNorms; pre-activation bottlenecks by default, post-activation ones as
`layer_type: bottleneck`."""

from __future__ import annotations

import numpy as np
from onnxscript import nn

from converter.components import Linear, activation
from converter.components.conv2d import Conv2d, GroupNorm
from converter.components.pooling import global_mean, pad, same_pad
from converter.config.convnet import ConvNetRules, make_divisible, stage_list
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH
from converter.weights import Assembly

WEIGHT_EPS = 1e-8  # every BiT convolution standardizes with this epsilon
NORM_EPS = 1e-5


class BitRules(ConvNetRules):
    def read_extra(self, r):
        depths = stage_list(r, "depths", int)
        extra = {
            "depths": depths,
            "hidden_sizes": stage_list(r, "hidden_sizes", int, len(depths)),
            "embedding_size": r.int("embedding_size", default=64),
            "layer_type": r.str("layer_type", default="preactivation"),
            "hidden_act": r.str("hidden_act", default="relu"),
            "global_padding": r.get("global_padding"),
            "num_groups": r.int("num_groups", default=32),
            "embedding_dynamic_padding": r.bool("embedding_dynamic_padding", False),
            "output_stride": r.int("output_stride", default=32),
            "width_factor": r.int("width_factor", default=1),
        }
        if extra["layer_type"] not in ("preactivation", "bottleneck"):
            r.refuse("layer_type", "BiT's layers are 'preactivation' or 'bottleneck'")
        padding = extra["global_padding"]
        if padding is not None and not isinstance(padding, str):
            r.refuse("global_padding", "it is null or a padding name ('SAME', 'valid')")
        return extra

    def hidden_size(self, r, extra):
        return stages(extra)[-1][0]


def stages(extra):
    """(out channels, stride, dilation) of each stage."""
    found, current, dilation = [], 4, 1
    for i, size in enumerate(extra["hidden_sizes"]):
        stride = 1 if i == 0 else 2
        if current >= extra["output_stride"]:
            dilation *= stride
            stride = 1
        found.append((make_divisible(size * extra["width_factor"]), stride, dilation))
        current *= stride
    return found


class StandardizedConv(Conv2d):
    """WeightStandardizedConv2d: the weight standardized per output filter (folded at binding),
    padded as BiT's `global_padding` says (TensorFlow's "same" at run time where it must be)."""

    def __init__(self, extra, dtype, in_ch, out_ch, kernel, stride=1, dilation=1, groups=1):
        padding, same = 0, False
        mode = (extra["global_padding"] or "").lower()
        if mode == "same" and (stride != 1 or dilation * (kernel - 1) % 2):
            same = True  # transformers' DynamicPad2d: TensorFlow's "SAME"
        elif mode != "valid":
            padding = ((stride - 1) + dilation * (kernel - 1)) // 2
        super().__init__(
            in_ch, out_ch, kernel, dtype, stride, padding, groups, False, dilation, same
        )

    def assemblies(self) -> dict[str, Assembly]:
        shape = tuple(self.weight.shape.dims)

        def standardize(arrays):
            weight = arrays[0].astype(np.float64)
            flat = weight.reshape(shape[0], -1)
            mean, var = flat.mean(1, keepdims=True), flat.var(1, keepdims=True)
            return ((flat - mean) / np.sqrt(var + WEIGHT_EPS)).reshape(shape)

        return {self.weight.name: Assembly(((self.weight.name, shape),), standardize)}


class NormAct(GroupNorm):
    """BitGroupNormActivation: GroupNorm, then the activation (unless `act` is None)."""

    def __init__(self, extra, dtype, channels, act=True):
        super().__init__(extra["num_groups"], channels, NORM_EPS, dtype)
        self.act = extra["hidden_act"] if act else None

    def forward(self, op, x):
        x = super().forward(op, x)
        return x if self.act is None else activation(op, self.act, x)


class Embeddings(nn.Module):
    """A 7x7 stride-2 conv, a pixel of zeros around it (unless the padding is 'SAME'), the norm
    of post-activation models, a 3x3 stride-2 max pool."""

    def __init__(self, cfg, dtype):
        super().__init__()
        extra, width = cfg.extra, cfg.extra["embedding_size"]
        self.convolution = StandardizedConv(extra, dtype, cfg.num_channels, width, 7, stride=2)
        preact = extra["layer_type"] == "preactivation"
        self.norm = None if preact else NormAct(extra, dtype, width)
        self.pad_by_one = (extra["global_padding"] or "").upper() != "SAME"
        self.dynamic_pool = extra["embedding_dynamic_padding"]

    def forward(self, op, x):
        x = self.convolution(op, x)
        if self.pad_by_one:
            x = pad(op, x, 1, 1, 1, 1)
        if self.norm is not None:
            x = self.norm(op, x)
        if self.dynamic_pool:  # zeros, not -inf: they can win the max
            x = same_pad(op, x, (3, 3), (2, 2))
        return op.MaxPool(x, kernel_shape=[3, 3], strides=[2, 2])


class Downsample(nn.Module):
    """The shortcut's 1x1 conv (and, after post-activation layers, its GroupNorm)."""

    def __init__(self, extra, dtype, in_ch, out_ch, stride, preact):
        super().__init__()
        self.conv = StandardizedConv(extra, dtype, in_ch, out_ch, 1, stride=stride)
        self.norm = None if preact else NormAct(extra, dtype, out_ch, act=False)

    def forward(self, op, x):
        x = self.conv(op, x)
        return x if self.norm is None else self.norm(op, x)


class PreActivationLayer(nn.Module):
    """norm1 before everything (the shortcut's downsample reads it too), then conv1, norm2,
    conv2 (the stride), norm3, conv3, plus the shortcut. Dilation is not applied."""

    def __init__(self, extra, dtype, in_ch, out_ch, stride, dilation, first, first_dilation):
        super().__init__()
        mid = make_divisible(out_ch * 0.25)
        self.downsample = Downsample(extra, dtype, in_ch, out_ch, stride, True) if first else None
        self.norm1 = NormAct(extra, dtype, in_ch)
        self.conv1 = StandardizedConv(extra, dtype, in_ch, mid, 1)
        self.norm2 = NormAct(extra, dtype, mid)
        self.conv2 = StandardizedConv(extra, dtype, mid, mid, 3, stride=stride)
        self.norm3 = NormAct(extra, dtype, mid)
        self.conv3 = StandardizedConv(extra, dtype, mid, out_ch, 1)

    def forward(self, op, x):
        preact = self.norm1(op, x)
        shortcut = x if self.downsample is None else self.downsample(op, preact)
        x = self.conv1(op, preact)
        x = self.conv2(op, self.norm2(op, x))
        x = self.conv3(op, self.norm3(op, x))
        return op.Add(x, shortcut)


class BottleneckLayer(nn.Module):
    """conv1, norm1, conv2 (the stride and dilation), norm2, conv3, norm3 without activation,
    then the activation of the sum with the shortcut."""

    def __init__(self, extra, dtype, in_ch, out_ch, stride, dilation, first, first_dilation):
        super().__init__()
        mid = make_divisible(out_ch * 0.25)
        self.downsample = Downsample(extra, dtype, in_ch, out_ch, stride, False) if first else None
        self.conv1 = StandardizedConv(extra, dtype, in_ch, mid, 1)
        self.norm1 = NormAct(extra, dtype, mid)
        self.conv2 = StandardizedConv(
            extra, dtype, mid, mid, 3, stride=stride, dilation=first_dilation
        )
        self.norm2 = NormAct(extra, dtype, mid)
        self.conv3 = StandardizedConv(extra, dtype, mid, out_ch, 1)
        self.norm3 = NormAct(extra, dtype, out_ch, act=False)
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        shortcut = x if self.downsample is None else self.downsample(op, x)
        y = self.norm1(op, self.conv1(op, x))
        y = self.norm2(op, self.conv2(op, y))
        y = self.norm3(op, self.conv3(op, y))
        return activation(op, self.act, op.Add(y, shortcut))


class Stage(nn.Module):
    def __init__(self, extra, dtype, in_ch, spec, depth):
        super().__init__()
        out_ch, stride, dilation = spec
        preact = extra["layer_type"] == "preactivation"
        layer_cls = PreActivationLayer if preact else BottleneckLayer
        first_dilation, layers = (1 if dilation in (1, 2) else 2), []
        for i in range(depth):
            layers.append(
                layer_cls(
                    extra,
                    dtype,
                    in_ch if i == 0 else out_ch,
                    out_ch,
                    stride if i == 0 else 1,
                    dilation,
                    i == 0,
                    first_dilation,
                )
            )
            first_dilation = dilation
        self.layers = nn.ModuleList(layers)

    def forward(self, op, x):
        for layer in self.layers:
            x = layer(op, x)
        return x


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra, in_ch, found = cfg.extra, cfg.extra["embedding_size"], []
        for spec, depth in zip(stages(extra), extra["depths"], strict=True):
            found.append(Stage(extra, dtype, in_ch, spec, depth))
            in_ch = spec[0]
        self.stages = nn.ModuleList(found)

    def forward(self, op, x):
        for stage in self.stages:
            x = stage(op, x)
        return x


class BitBody(ConvNetBody):
    """BitModel: the pooler output keeps its 1x1 map ([batch, channels, 1, 1])."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.embedder = Embeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)
        preact = cfg.extra["layer_type"] == "preactivation"
        self.norm = NormAct(cfg.extra, dtype, cfg.hidden_size) if preact else None

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, self.embedder(op, pixel_values))
        if self.norm is not None:
            hidden = self.norm(op, hidden)
        size = self.cfg.hidden_size
        pooled = global_mean(op, hidden, keep=True)
        return Features(hidden, [BATCH, size, *FEATURE_DIMS], pooled, [BATCH, size, 1, 1])


class Classifier(nn.Module):
    """nn.Sequential(Flatten, Linear): the Linear is `1`."""

    def __init__(self, cfg, dtype):
        super().__init__()
        setattr(self, "1", Linear(cfg.hidden_size, cfg.num_labels, True, dtype))

    def forward(self, op, pooled):
        return getattr(self, "1")(op, op.Flatten(pooled))


class BitModel(VisionEncoderModel):
    body_cls = BitBody
    body_name = "bit"

    def make_classifier(self, cfg, dtype, tensors):
        self.classifier = Classifier(cfg, dtype)


FAMILIES = [
    Family(
        "bit",
        BitModel,
        "ResNet v2 with weight-standardized convolutions (folded at binding) and GroupNorm",
        ("google/bit-50",),
        rules=BitRules(),
        task="image-feature-extraction",
        category="vision",
        unused=CONVNET_UNUSED,
        prefix="bit.",
    ),
]

"""TextNet (FAST's backbone): a strided stem, then stages of RepVGG-style layers that add a
kxk conv, its kx1 and 1xk companions and (same width, stride 1) a BatchNorm of the input, each
branch with its own BatchNorm, before a ReLU. The model's pooler averages the map into 2x2."""

from __future__ import annotations

from onnxscript import nn

from converter.components import Linear
from converter.components.conv2d import BatchNorm2d, Conv2d
from converter.components.conv_layers import ConvNorm
from converter.components.pooling import adaptive_mean, global_mean
from converter.config.convnet import ConvNetRules, stage_list
from converter.errors import ConfigError
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH

# TextNetConfig's own layout when config.json leaves it out
KERNELS = (
    ((3, 3), (3, 3), (3, 3)),
    ((3, 3), (1, 3), (3, 3), (3, 1)),
    ((3, 3), (3, 3), (3, 1), (1, 3)),
    ((3, 3), (3, 1), (1, 3), (3, 3)),
)
STRIDES = ((1, 2, 1), (2, 1, 1, 1), (2, 1, 1, 1), (2, 1, 1, 1))


class TextNetRules(ConvNetRules):
    channels_key = "stem_num_channels"

    def read_extra(self, r):
        kernels = r.get("conv_layer_kernel_sizes", default=KERNELS)
        strides = r.get("conv_layer_strides", default=STRIDES)
        extra = {
            "kernels": tuple(tuple(_pair(k) for k in stage) for stage in _stages(kernels)),
            "strides": tuple(tuple(_positive(s) for s in stage) for stage in _stages(strides)),
            "hidden_sizes": stage_list(r, "hidden_sizes", int, len(kernels) + 1),
            "stem_kernel_size": r.int("stem_kernel_size", default=3),
            "stem_stride": r.int("stem_stride", default=2),
            "stem_out_channels": r.int("stem_out_channels", default=64),
            "stem_act_func": r.get("stem_act_func", default="relu"),
            "eps": r.float("batch_norm_eps", default=1e-5),
        }
        if [len(s) for s in extra["kernels"]] != [len(s) for s in extra["strides"]]:
            raise ConfigError("'conv_layer_kernel_sizes' and 'conv_layer_strides' disagree")
        if extra["stem_out_channels"] != extra["hidden_sizes"][0]:
            raise ConfigError("'stem_out_channels' must equal the first of 'hidden_sizes'")
        return extra

    def hidden_size(self, r, extra):
        return extra["hidden_sizes"][-1]


def _stages(value):
    if (
        not isinstance(value, list | tuple)
        or not value
        or not all(isinstance(stage, list | tuple) and stage for stage in value)
    ):
        raise ConfigError("TextNet's per-layer settings must list stages of layers")
    return value


def _positive(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"TextNet's layer settings hold positive integers, got {value!r}")
    return value


def _pair(value) -> tuple[int, int]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ConfigError(f"'conv_layer_kernel_sizes' holds [height, width] pairs, got {value!r}")
    return (_positive(value[0]), _positive(value[1]))


class Stem(ConvNorm):
    """TextNetConvLayer: `conv`, `batch_norm` and `stem_act_func`."""

    conv_name, norm_name = "conv", "batch_norm"


class RepConvLayer(nn.Module):
    """`main_conv` (kxk), `vertical_conv` (kx1, unless k's width is 1), `horizontal_conv` (1xk,
    unless its height is 1), each with its `..._batch_norm`, and `rbr_identity` (a BatchNorm of
    the input) where width and size stay: summed, then ReLU."""

    def __init__(self, extra, dtype, in_ch, out_ch, kernel, stride):
        super().__init__()
        eps, (kh, kw) = extra["eps"], kernel
        shapes = {
            "main": (kernel, ((kh - 1) // 2, (kw - 1) // 2)),
            "vertical": ((kh, 1), ((kh - 1) // 2, 0)) if kw != 1 else None,
            "horizontal": ((1, kw), (0, (kw - 1) // 2)) if kh != 1 else None,
        }
        self.branches = [name for name, shape in shapes.items() if shape is not None]
        for name in self.branches:
            size, padding = shapes[name]
            conv = Conv2d(in_ch, out_ch, size, dtype, stride, padding, bias=False)
            setattr(self, f"{name}_conv", conv)
            setattr(self, f"{name}_batch_norm", BatchNorm2d(out_ch, dtype, eps))
        same = in_ch == out_ch and stride == 1
        self.rbr_identity = BatchNorm2d(in_ch, dtype, eps) if same else None

    def forward(self, op, x):
        y = None
        for name in self.branches:
            branch = getattr(self, f"{name}_conv")(op, x)
            branch = getattr(self, f"{name}_batch_norm")(op, branch)
            y = branch if y is None else op.Add(y, branch)
        if self.rbr_identity is not None:
            y = op.Add(y, self.rbr_identity(op, x))
        return op.Relu(y)


class Stage(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        kernels, strides = extra["kernels"][i], extra["strides"][i]
        in_ch, out_ch = extra["hidden_sizes"][i], extra["hidden_sizes"][i + 1]
        self.stage = nn.ModuleList(
            RepConvLayer(extra, dtype, in_ch if j == 0 else out_ch, out_ch, kernel, stride)
            for j, (kernel, stride) in enumerate(zip(kernels, strides, strict=True))
        )

    def forward(self, op, x):
        for layer in self.stage:
            x = layer(op, x)
        return x


class Encoder(nn.Module):
    def __init__(self, extra, dtype):
        super().__init__()
        self.stages = nn.ModuleList(Stage(extra, dtype, i) for i in range(len(extra["kernels"])))

    def forward(self, op, x):
        for stage in self.stages:
            x = stage(op, x)
        return x


class TextNetBody(ConvNetBody):
    """TextNetModel: the last map, and its 2x2 average (`pooler`, [batch, channels, 2, 2])."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        extra, k = cfg.extra, cfg.extra["stem_kernel_size"]
        act = extra["stem_act_func"]
        self.stem = Stem(
            cfg.num_channels,
            extra["stem_out_channels"],
            k,
            dtype,
            stride=extra["stem_stride"],
            padding=k // 2,
            eps=extra["eps"],
            act=act,
        )
        self.encoder = Encoder(extra, dtype)

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, self.stem(op, pixel_values))
        size = self.cfg.hidden_size
        pooled = adaptive_mean(op, hidden, (2, 2)) if self.pooled else None
        return Features(hidden, [BATCH, size, *FEATURE_DIMS], pooled, [BATCH, size, 2, 2])


class TextNetModel(VisionEncoderModel):
    """The classifier is `fc` over the mean of the map (its `classifier` holds only the pool
    and flatten)."""

    body_cls = TextNetBody
    body_name = "textnet"

    def uses_pooler(self, task, tensors):
        return task == "image-feature-extraction"

    def make_classifier(self, cfg, dtype, tensors):
        self.fc = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features):
        return self.fc(op, global_mean(op, features.hidden))


FAMILIES = [
    Family(
        "textnet",
        TextNetModel,
        "RepVGG-style layers summing kxk, kx1 and 1xk conv branches (FAST's backbone)",
        ("czczup/textnet-base",),
        rules=TextNetRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"fc\..*"),
        prefix="textnet.",
    ),
]

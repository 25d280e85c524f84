"""PP-LCNet: a strided stem, then depthwise-separable blocks (a depthwise conv, an optional
squeeze-and-excitation with a hard sigmoid, a pointwise conv; hardswish by default) of widths
scaled by `scale`; the classifier pools, widens with a 1x1 conv (`class_expand`), scales by
the keep rate of its dropout (as transformers does at inference) and applies `head`.
Classification only; transformers names its logits `last_hidden_state`."""

from __future__ import annotations

from typing import ClassVar

from onnxscript import nn

from converter.components import Linear, activation
from converter.components.batch_norm import BATCH_NORM_UNUSED
from converter.components.conv2d import Conv2d
from converter.components.conv_layers import ConvNorm
from converter.components.pooling import global_mean
from converter.config.convnet import ConvNetRules, make_divisible
from converter.errors import ConfigError
from converter.models.convnet import ClassifierOnly
from converter.registry import Family

# PPLCNetConfig's own blocks when config.json leaves them out: per stage, (kernel, in, out,
# stride, squeeze-and-excitation) of each block
BLOCKS = (
    ((3, 16, 32, 1, False),),
    ((3, 32, 64, 2, False), (3, 64, 64, 1, False)),
    ((3, 64, 128, 2, False), (3, 128, 128, 1, False)),
    ((3, 128, 256, 2, False),) + ((5, 256, 256, 1, False),) * 5,
    ((5, 256, 512, 2, True), (5, 512, 512, 1, True)),
)


class PPLCNetRules(ConvNetRules):
    def read_extra(self, r):
        extra = {
            "blocks": _blocks(r.get("block_configs", default=BLOCKS)),
            "scale": r.float("scale", default=1.0),
            "stem_channels": r.int("stem_channels", default=16),
            "stem_stride": r.int("stem_stride", default=2),
            "reduction": r.int("reduction", default=4),
            "class_expand": r.int("class_expand", default=1280),
            "divisor": r.int("divisor", default=8),
            "hidden_act": r.str("hidden_act", default="hardswish"),
            "keep": 1.0 - r.float("hidden_dropout_prob", default=0.2, positive=False),
        }
        return extra

    def hidden_size(self, r, extra):
        return extra["class_expand"]


def _blocks(value) -> tuple:
    def valid(block) -> bool:
        return (
            isinstance(block, list | tuple)
            and len(block) == 5
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in block[:4])
            and isinstance(block[4], bool)
        )

    if not isinstance(value, list | tuple) or len(value) != 5:
        raise ConfigError(
            "'block_configs' must list five stages of blocks (as transformers checks)"
        )
    for stage in value:
        if not isinstance(stage, list | tuple) or not stage or not all(map(valid, stage)):
            raise ConfigError(
                "'block_configs' blocks are [kernel, in, out, stride, squeeze-excitation]"
            )
    return tuple(tuple(tuple(block) for block in stage) for stage in value)


def scaled(extra, channels: int) -> int:
    return make_divisible(channels * extra["scale"], extra["divisor"])


def conv(extra, dtype, in_ch, out_ch, kernel, stride=1, groups=1):
    """PPLCNetConvLayer: a bias-free conv padded by half its kernel, BatchNorm, activation."""
    return ConvNorm(
        in_ch,
        out_ch,
        kernel,
        dtype,
        stride=stride,
        padding=kernel // 2,
        groups=groups,
        act=extra["hidden_act"],
    )


class Step(nn.Module):
    """A parameter-less activation of the ModuleList (keeps its neighbours' indices)."""


class SqueezeExcitation(nn.Module):
    """x times hardsigmoid(conv(relu(conv(mean of x)))): the convs are `convolutions.0` and
    `convolutions.2` (an nn.ModuleList with the activations between)."""

    def __init__(self, dtype, channels, reduction):
        super().__init__()
        squeezed = channels // reduction
        self.convolutions = nn.ModuleList(
            [
                Conv2d(channels, squeezed, 1, dtype),
                Step(),
                Conv2d(squeezed, channels, 1, dtype),
                Step(),
            ]
        )

    def forward(self, op, x):
        reduce, _, expand, _ = self.convolutions
        scale = op.Relu(reduce(op, global_mean(op, x, keep=True)))
        return op.Mul(x, op.HardSigmoid(expand(op, scale), alpha=1.0 / 6, beta=0.5))


class SeparableLayer(nn.Module):
    def __init__(self, extra, dtype, spec):
        super().__init__()
        kernel, in_ch, out_ch, stride, excite = spec
        in_ch, out_ch = scaled(extra, in_ch), scaled(extra, out_ch)
        self.depthwise_convolution = conv(extra, dtype, in_ch, in_ch, kernel, stride, in_ch)
        self.squeeze_excitation_module = (
            SqueezeExcitation(dtype, in_ch, extra["reduction"]) if excite else None
        )
        self.pointwise_convolution = conv(extra, dtype, in_ch, out_ch, 1)

    def forward(self, op, x):
        x = self.depthwise_convolution(op, x)
        if self.squeeze_excitation_module is not None:
            x = self.squeeze_excitation_module(op, x)
        return self.pointwise_convolution(op, x)


class Block(nn.Module):
    def __init__(self, extra, dtype, stage):
        super().__init__()
        self.layers = nn.ModuleList(SeparableLayer(extra, dtype, spec) for spec in stage)

    def forward(self, op, x):
        for layer in self.layers:
            x = layer(op, x)
        return x


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra = cfg.extra
        stem = scaled(extra, extra["stem_channels"])
        self.convolution = conv(extra, dtype, cfg.num_channels, stem, 3, extra["stem_stride"])
        self.blocks = nn.ModuleList(Block(extra, dtype, stage) for stage in extra["blocks"])

    def forward(self, op, x):
        x = self.convolution(op, x)
        for block in self.blocks:
            x = block(op, x)
        return x


class PPLCNetModel(ClassifierOnly):
    # an output's name in transformers' output where it differs (read by validation)
    reference_names: ClassVar[dict[str, str]] = {"logits": "last_hidden_state"}

    def __init__(self, cfg, dtype, ep, task, tensors):
        super().__init__(cfg, dtype, ep, task, tensors)
        extra = cfg.extra
        self.encoder = Encoder(cfg, dtype)
        last = scaled(extra, extra["blocks"][-1][-1][2])
        self.last_convolution = Conv2d(last, extra["class_expand"], 1, dtype, bias=False)
        self.head = Linear(extra["class_expand"], cfg.num_labels, True, dtype)

    def logits(self, op, pixel_values):
        extra = self.cfg.extra
        pooled = global_mean(op, self.encoder(op, pixel_values), keep=True)
        x = activation(op, extra["hidden_act"], self.last_convolution(op, pooled))
        x = op.Mul(op.Flatten(x), op.CastLike(extra["keep"], x))
        return self.head(op, x)


FAMILIES = [
    Family(
        "pp_lcnet",
        PPLCNetModel,
        "depthwise-separable blocks with hard-sigmoid squeeze-and-excitation (PaddlePaddle)",
        ("PaddlePaddle/PP-LCNet_x1_0_table_cls_safetensors",),
        rules=PPLCNetRules(),
        task="image-classification",
        category="vision",
        unused=(BATCH_NORM_UNUSED,),
    ),
]

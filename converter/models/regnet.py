"""RegNet: ResNet's stages (converter/models/resnet.py) with a 3x3 stride-2 stem and no max
pool, and X blocks (1x1, grouped 3x3 of `groups_width` channels a group, 1x1, all at the stage
width) or Y blocks (X with squeeze-and-excitation after the grouped Conv)."""

from __future__ import annotations

from onnxscript import nn

from converter.components import activation
from converter.components.conv2d import Conv2d, Placeholder
from converter.models.resnet import (
    ResNetBody,
    ResNetConvLayer,
    ResNetEncoder,
    ResNetImageModel,
    ResNetRules,
    ResNetShortCut,
    ResNetStage,
)
from converter.registry import Family

LAYER_TYPES = ("x", "y")


class RegNetRules(ResNetRules):
    """ResNet's stage keys, `groups_width`, and `layer_type` x or y."""

    def read_extra(self, r):
        layer_type = r.str("layer_type", default="y")
        if layer_type not in LAYER_TYPES:
            r.refuse("layer_type", f"RegNet layers are {' or '.join(LAYER_TYPES)}")
        return {
            "embedding_size": r.int("embedding_size"),
            "groups_width": r.int("groups_width"),
            "squeeze_excitation": layer_type == "y",
            "downsample_in_first_stage": r.bool("downsample_in_first_stage", True),
        }


class SqueezeExcitation(nn.Module):
    """x times sigmoid(Conv(ReLU(Conv(mean of x over the map)))), per channel: `attention.0`
    and `attention.2` (torch's Sequential indices)."""

    def __init__(self, channels: int, reduced: int, dtype):
        super().__init__()
        self.attention = nn.ModuleList(
            [
                Conv2d(channels, reduced, 1, dtype),
                Placeholder(lambda op, x: op.Relu(x)),
                Conv2d(reduced, channels, 1, dtype),
            ]
        )

    def forward(self, op, x):
        weights = op.GlobalAveragePool(x)
        for step in self.attention:
            weights = step(op, weights)
        return op.Mul(x, op.Sigmoid(weights))


class RegNetBlock(nn.Module):
    def __init__(self, cfg, dtype, inputs: int, outputs: int, stride: int):
        super().__init__()
        act = cfg.activation
        projected = inputs != outputs or stride != 1
        self.shortcut = ResNetShortCut(dtype, inputs, outputs, stride) if projected else None
        groups = max(1, outputs // cfg.extra["groups_width"])
        steps = [
            ResNetConvLayer(dtype, inputs, outputs, 1, act=act),
            ResNetConvLayer(dtype, outputs, outputs, 3, stride, act, groups),
        ]
        if cfg.extra["squeeze_excitation"]:
            steps.append(SqueezeExcitation(outputs, round(inputs / 4), dtype))
        steps.append(ResNetConvLayer(dtype, outputs, outputs, 1, act=None))
        self.layer = nn.ModuleList(steps)
        self.act = act

    def forward(self, op, x):
        residual = x if self.shortcut is None else self.shortcut(op, x)
        for step in self.layer:
            x = step(op, x)
        return activation(op, self.act, op.Add(x, residual))


class RegNetStage(ResNetStage):
    block_cls = RegNetBlock


class RegNetEncoder(ResNetEncoder):
    stage_cls = RegNetStage


class RegNetEmbeddings(nn.Module):
    """`embedder`: a 3x3 stride-2 Conv layer."""

    def __init__(self, cfg, dtype):
        super().__init__()
        width = cfg.extra["embedding_size"]
        self.embedder = ResNetConvLayer(dtype, cfg.num_channels, width, 3, 2, cfg.activation)

    def forward(self, op, pixel_values):
        return self.embedder(op, pixel_values)


class RegNetBody(ResNetBody):
    embeddings_cls = RegNetEmbeddings
    encoder_cls = RegNetEncoder


class RegNetImageModel(ResNetImageModel):
    body_cls = RegNetBody
    body_name = "regnet"


FAMILIES = [
    Family(
        "regnet",
        RegNetImageModel,
        "ResNet-like stages of grouped-Conv blocks, squeeze-and-excitation in Y models",
        ("facebook/regnet-y-040",),
        rules=RegNetRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(r".*num_batches_tracked",),
        prefix="regnet.",
    ),
]

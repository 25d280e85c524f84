"""ResNet: a 7x7 stride-2 Conv stem and a 3x3 stride-2 max pool, stages of residual blocks
(basic: two 3x3 Convs; bottleneck: 1x1 down to a quarter, 3x3, 1x1 up), each Conv followed by
BatchNorm (its running statistics; onnxruntime folds it into the Conv), a projecting shortcut
where the width or stride changes; the pooler averages the last map to [batch, channels, 1, 1].
Convolutions take any image size."""

from __future__ import annotations

from onnxscript import nn

from converter.components import Linear, activation
from converter.components.conv2d import BatchNorm2d, Conv2d, Placeholder
from converter.config.vision import VisionRules, int_list, same_length
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH
from converter.tasks.image_encoding import HEIGHT, WIDTH

LAYER_TYPES = ("basic", "bottleneck")


class ResNetRules(VisionRules):
    """`embedding_size` (the stem's width), `hidden_sizes` and `depths` per stage,
    `layer_type`, where the first stage and bottlenecks downsample."""

    def stages(self, r):
        widths, depths = int_list(r, "hidden_sizes"), int_list(r, "depths")
        same_length(hidden_sizes=widths, depths=depths)
        return widths, depths, (), widths

    def image_size(self, r):
        return None

    def patch_size(self, r):
        return None

    def read_extra(self, r):
        layer_type = r.str("layer_type", default="bottleneck")
        if layer_type not in LAYER_TYPES:
            r.refuse("layer_type", f"ResNet layers are {' or '.join(LAYER_TYPES)}")
        return {
            "embedding_size": r.int("embedding_size"),
            "bottleneck": layer_type == "bottleneck",
            "downsample_in_first_stage": r.bool("downsample_in_first_stage", False),
            "downsample_in_bottleneck": r.bool("downsample_in_bottleneck", False),
        }


class ResNetConvLayer(nn.Module):
    """`convolution` (no bias, padding kernel // 2), `normalization`, then the activation."""

    def __init__(
        self, dtype, inputs, outputs, kernel=3, stride=1, act: str | None = "relu", groups=1
    ):
        super().__init__()
        self.convolution = Conv2d(
            inputs,
            outputs,
            kernel,
            dtype,
            stride=stride,
            padding=kernel // 2,
            groups=groups,
            bias=False,
        )
        self.normalization = BatchNorm2d(outputs, dtype)
        self.act = act

    def forward(self, op, x):
        x = self.normalization(op, self.convolution(op, x))
        return x if self.act is None else activation(op, self.act, x)


class ResNetShortCut(ResNetConvLayer):
    """The residual's 1x1 projection (no activation)."""

    def __init__(self, dtype, inputs, outputs, stride):
        super().__init__(dtype, inputs, outputs, kernel=1, stride=stride, act=None)


class ResNetBlock(nn.Module):
    """`layer` (the Convs), plus the input or its `shortcut`, then the activation."""

    def __init__(self, cfg, dtype, inputs: int, outputs: int, stride: int):
        super().__init__()
        # the Convs inside a block are ReLU whatever hidden_act says (transformers' default)
        act, inner_act = cfg.activation, "relu"
        projected = inputs != outputs or stride != 1
        self.shortcut = ResNetShortCut(dtype, inputs, outputs, stride) if projected else None
        if cfg.extra["bottleneck"]:
            inner = outputs // 4
            first = stride if cfg.extra["downsample_in_bottleneck"] else 1
            convs = [
                ResNetConvLayer(dtype, inputs, inner, 1, first, inner_act),
                ResNetConvLayer(dtype, inner, inner, 3, stride // first, inner_act),
                ResNetConvLayer(dtype, inner, outputs, 1, act=None),
            ]
        else:
            convs = [
                ResNetConvLayer(dtype, inputs, outputs, 3, stride, inner_act),
                ResNetConvLayer(dtype, outputs, outputs, 3, act=None),
            ]
        self.layer = nn.ModuleList(convs)
        self.act = act

    def forward(self, op, x):
        residual = x if self.shortcut is None else self.shortcut(op, x)
        for conv in self.layer:
            x = conv(op, x)
        return activation(op, self.act, op.Add(x, residual))


class ResNetStage(nn.Module):
    """`layers`: the first block changes width and (but in a first stage that does not
    downsample) halves the map."""

    block_cls = ResNetBlock

    def __init__(self, cfg, dtype, stage: int):
        super().__init__()
        inputs = cfg.widths[stage - 1] if stage else cfg.extra["embedding_size"]
        first_stride = 2 if stage or cfg.extra["downsample_in_first_stage"] else 1
        width = cfg.widths[stage]
        blocks = [self.block_cls(cfg, dtype, inputs, width, first_stride)]
        rest = range(cfg.depths[stage] - 1)
        blocks += [self.block_cls(cfg, dtype, width, width, 1) for _ in rest]
        self.layers = nn.ModuleList(blocks)

    def forward(self, op, x):
        for block in self.layers:
            x = block(op, x)
        return x


class ResNetEmbeddings(nn.Module):
    """`embedder` (7x7 stride-2 Conv layer), then a 3x3 stride-2 max pool."""

    def __init__(self, cfg, dtype):
        super().__init__()
        width = cfg.extra["embedding_size"]
        self.embedder = ResNetConvLayer(dtype, cfg.num_channels, width, 7, 2, cfg.activation)

    def forward(self, op, pixel_values):
        x = self.embedder(op, pixel_values)
        return op.MaxPool(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


class ResNetEncoder(nn.Module):
    stage_cls = ResNetStage

    def __init__(self, cfg, dtype):
        super().__init__()
        stages = [self.stage_cls(cfg, dtype, i) for i in range(len(cfg.depths))]
        self.stages = nn.ModuleList(stages)

    def forward(self, op, x):
        for stage in self.stages:
            x = stage(op, x)
        return x


class ResNetBody(nn.Module):
    """ResNetModel: last_hidden_state is the last map; pooler_output its average,
    [batch, channels, 1, 1] as transformers keeps it."""

    embeddings_cls = ResNetEmbeddings
    encoder_cls = ResNetEncoder

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__()
        self.embedder = self.embeddings_cls(cfg, dtype)
        self.encoder = self.encoder_cls(cfg, dtype)
        self.cfg = cfg

    def image_dims(self):
        return HEIGHT, WIDTH

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, self.embedder(op, pixel_values))
        size = self.cfg.hidden_size
        pooled = op.GlobalAveragePool(hidden)
        return Features(hidden, [BATCH, size, *FEATURE_DIMS], pooled, [BATCH, size, 1, 1])


class ResNetImageModel(VisionEncoderModel):
    """The classifier is torch's Sequential(Flatten, Linear): `classifier.1`."""

    body_cls = ResNetBody
    body_name = "resnet"

    def make_classifier(self, cfg, dtype, tensors):
        flatten = Placeholder(lambda op, x: op.Flatten(x, axis=1))
        linear = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        self.classifier = nn.ModuleList([flatten, linear])

    def classify(self, op, features):
        x = features.pooled
        for step in self.classifier:
            x = step(op, x)
        return x


FAMILIES = [
    Family(
        "resnet",
        ResNetImageModel,
        "Conv stem and max pool, basic or bottleneck residual blocks with BatchNorm",
        ("microsoft/resnet-50",),
        rules=ResNetRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(r".*num_batches_tracked",),
        prefix="resnet.",
    ),
]

"""PoolFormer (MetaFormer): stages of a strided patch conv, then blocks that mix tokens by
average pooling (minus the input) and channels by two 1x1 convs, each after a one-group
GroupNorm and scaled per channel (layer scale)."""

from __future__ import annotations

from onnxscript import nn

from converter.components import Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.conv_layers import GroupNorm
from converter.components.pooling import global_mean
from converter.config.convnet import ConvNetRules, stage_list
from converter.models.convnet import CONVNET_UNUSED, MAP_DIMS, ConvNetBody
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH

NORM_EPS = 1e-5  # PoolFormerGroupNorm keeps torch's default


class PoolFormerRules(ConvNetRules):
    def read_extra(self, r):
        blocks = r.int("num_encoder_blocks", default=4, hi=16)
        extra = {
            key: stage_list(r, key, int, blocks)
            for key in ("depths", "hidden_sizes", "patch_sizes", "strides")
        }
        extra["padding"] = tuple(stage_list(r, "padding", float, blocks))
        extra.update(
            pool_size=r.int("pool_size", default=3),
            mlp_ratio=r.float("mlp_ratio", default=4.0),
            hidden_act=r.str("hidden_act", default="gelu"),
            use_layer_scale=r.bool("use_layer_scale", True),
        )
        if extra["pool_size"] % 2 == 0:
            r.refuse("pool_size", "an even pooling window changes the map's size")
        if any(p != int(p) for p in extra["padding"]):
            r.refuse("padding", "paddings are whole pixels")
        extra["padding"] = tuple(int(p) for p in extra["padding"])
        return extra

    def hidden_size(self, r, extra):
        return extra["hidden_sizes"][-1]


def scaled(op, scale, x):
    """x [batch, channels, height, width] times a per-channel `scale` [channels]."""
    return op.Mul(op.Unsqueeze(scale, [1, 2]), x)


class Embeddings(nn.Module):
    def __init__(self, extra, dtype, i, in_channels):
        super().__init__()
        size, stride = extra["patch_sizes"][i], extra["strides"][i]
        width, padding = extra["hidden_sizes"][i], extra["padding"][i]
        self.projection = Conv2d(in_channels, width, size, dtype, stride, padding)

    def forward(self, op, x):
        return self.projection(op, x)


class Output(nn.Module):
    def __init__(self, extra, dtype, width):
        super().__init__()
        inner = int(width * extra["mlp_ratio"])
        self.conv1 = Conv2d(width, inner, 1, dtype)
        self.conv2 = Conv2d(inner, width, 1, dtype)
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        return self.conv2(op, activation(op, self.act, self.conv1(op, x)))


class Layer(nn.Module):
    def __init__(self, extra, dtype, width):
        super().__init__()
        self.output = Output(extra, dtype, width)
        self.before_norm = GroupNorm(1, width, NORM_EPS, dtype)
        self.after_norm = GroupNorm(1, width, NORM_EPS, dtype)
        if extra["use_layer_scale"]:
            self.layer_scale_1 = nn.Parameter([width], dtype)
            self.layer_scale_2 = nn.Parameter([width], dtype)
        self.window, self.layer_scale = extra["pool_size"], extra["use_layer_scale"]

    def pooling(self, op, x):
        """Average pooling over a window (padding not counted), minus the input."""
        half = self.window // 2
        pooled = op.AveragePool(
            x,
            kernel_shape=[self.window] * 2,
            strides=[1, 1],
            pads=[half] * 4,
            count_include_pad=0,
        )
        return op.Sub(pooled, x)

    def forward(self, op, x):
        mixed = self.pooling(op, self.before_norm(op, x))
        if self.layer_scale:
            mixed = scaled(op, self.layer_scale_1, mixed)
        x = op.Add(x, mixed)
        y = self.output(op, self.after_norm(op, x))
        if self.layer_scale:
            y = scaled(op, self.layer_scale_2, y)
        return op.Add(x, y)


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra, embeddings, blocks = cfg.extra, [], []
        for i, depth in enumerate(extra["depths"]):
            in_channels = cfg.num_channels if i == 0 else extra["hidden_sizes"][i - 1]
            embeddings.append(Embeddings(extra, dtype, i, in_channels))
            width = extra["hidden_sizes"][i]
            blocks.append(nn.ModuleList([Layer(extra, dtype, width) for _ in range(depth)]))
        self.patch_embeddings = nn.ModuleList(embeddings)
        self.block = nn.ModuleList(blocks)

    def forward(self, op, x):
        for embeddings, layers in zip(self.patch_embeddings, self.block, strict=True):
            x = embeddings(op, x)
            for layer in layers:
                x = layer(op, x)
        return x


class PoolFormerBody(ConvNetBody):
    """PoolFormerModel: the last map, no pooler."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, pixel_values)
        return Features(hidden, [BATCH, self.cfg.hidden_size, *MAP_DIMS])


class PoolFormerModel(VisionEncoderModel):
    """The classifier reads the mean of the GroupNorm-ed last map (`norm`)."""

    body_cls = PoolFormerBody
    body_name = "poolformer"

    def make_classifier(self, cfg, dtype, tensors):
        self.norm = GroupNorm(1, cfg.hidden_size, NORM_EPS, dtype)
        self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features):
        return self.classifier(op, global_mean(op, self.norm(op, features.hidden)))


FAMILIES = [
    Family(
        "poolformer",
        PoolFormerModel,
        "MetaFormer blocks mixing tokens by average pooling, GroupNorm, layer scale",
        ("sail/poolformer_s12",),
        rules=PoolFormerRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"norm\..*"),
        prefix="poolformer.",
    ),
]

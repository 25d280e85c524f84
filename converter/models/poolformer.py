"""PoolFormer: stages entered through a strided Conv, blocks whose token mixer is average
pooling minus its input (padding not counted) and whose MLP is two 1x1 Convs, each behind a
one-group GroupNorm and (use_layer_scale) scaled per channel. The classifier reads the mean of
a GroupNorm of the last map. Convolutions and pooling take any image size."""

from __future__ import annotations

from onnxscript import nn

from converter.components import Linear, activation
from converter.components.conv2d import Conv2d, GroupNorm
from converter.config.vision import MAX_IMAGE_SIDE, VisionRules, int_list, same_length
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH
from converter.tasks.image_encoding import HEIGHT, WIDTH

NORM_EPS = 1e-5  # PoolFormerGroupNorm keeps torch's default


class PoolFormerRules(VisionRules):
    """Per stage: `hidden_sizes`, `depths`, and the entry Conv's `patch_sizes`, `strides`,
    `padding` (`num_encoder_blocks` of each); `pool_size`, `mlp_ratio`, `use_layer_scale`."""

    def stages(self, r):
        widths, depths = int_list(r, "hidden_sizes"), int_list(r, "depths")
        same_length(hidden_sizes=widths, depths=depths)
        if r.int("num_encoder_blocks", default=len(depths)) != len(depths):
            r.refuse("num_encoder_blocks", f"it must equal the {len(depths)} stages of 'depths'")
        ratio = r.float("mlp_ratio", default=4.0)
        return widths, depths, (), tuple(int(w * ratio) for w in widths)

    def image_size(self, r):
        return None

    def patch_size(self, r):
        return None

    def read_extra(self, r):
        stages = len(int_list(r, "depths"))
        entry = {
            key: int_list(r, key, hi=MAX_IMAGE_SIDE, lo=lo)[:stages]
            for key, lo in (("patch_sizes", 1), ("strides", 1), ("padding", 0))
        }
        same_length(depths=(0,) * stages, **entry)
        return {
            **entry,
            "pool_size": r.int("pool_size", hi=MAX_IMAGE_SIDE),
            "layer_scale": r.bool("use_layer_scale", True),
        }


class PoolFormerEmbeddings(nn.Module):
    """`projection`: the stage's entry Conv."""

    def __init__(self, cfg, dtype, stage: int):
        super().__init__()
        inputs = cfg.widths[stage - 1] if stage else cfg.num_channels
        kernel, stride, padding = (
            cfg.extra[k][stage] for k in ("patch_sizes", "strides", "padding")
        )
        self.projection = Conv2d(
            inputs, cfg.widths[stage], kernel, dtype, stride=stride, padding=padding
        )

    def forward(self, op, x):
        return self.projection(op, x)


class PoolFormerOutput(nn.Module):
    """conv1, the activation, conv2 (1x1 Convs)."""

    def __init__(self, cfg, dtype, stage: int):
        super().__init__()
        width, inner = cfg.widths[stage], cfg.intermediate_sizes[stage]
        self.conv1 = Conv2d(width, inner, 1, dtype)
        self.conv2 = Conv2d(inner, width, 1, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.conv2(op, activation(op, self.act, self.conv1(op, x)))


class PoolFormerLayer(nn.Module):
    def __init__(self, cfg, dtype, stage: int):
        super().__init__()
        width = cfg.widths[stage]
        self.before_norm = GroupNorm(1, width, NORM_EPS, dtype)
        self.after_norm = GroupNorm(1, width, NORM_EPS, dtype)
        self.output = PoolFormerOutput(cfg, dtype, stage)
        scaled = cfg.extra["layer_scale"]
        self.layer_scale_1 = nn.Parameter([width], dtype) if scaled else None
        self.layer_scale_2 = nn.Parameter([width], dtype) if scaled else None
        self.pool = cfg.extra["pool_size"]

    def pooling(self, op, x):
        pooled = op.AveragePool(
            x,
            kernel_shape=[self.pool] * 2,
            strides=[1, 1],
            pads=[self.pool // 2] * 4,
            count_include_pad=0,
        )
        return op.Sub(pooled, x)

    def scaled(self, op, scale, x):
        return x if scale is None else op.Mul(op.Reshape(scale, [-1, 1, 1]), x)

    def forward(self, op, x):
        mixed = self.pooling(op, self.before_norm(op, x))
        x = op.Add(x, self.scaled(op, self.layer_scale_1, mixed))
        out = self.output(op, self.after_norm(op, x))
        return op.Add(x, self.scaled(op, self.layer_scale_2, out))


class PoolFormerEncoder(nn.Module):
    """`patch_embeddings` (one entry Conv per stage) and `block` (each stage's layers)."""

    def __init__(self, cfg, dtype):
        super().__init__()
        stages = range(len(cfg.depths))
        self.patch_embeddings = nn.ModuleList([PoolFormerEmbeddings(cfg, dtype, i) for i in stages])
        self.block = nn.ModuleList(
            [
                nn.ModuleList([PoolFormerLayer(cfg, dtype, i) for _ in range(cfg.depths[i])])
                for i in stages
            ]
        )

    def forward(self, op, x):
        for entry, layers in zip(self.patch_embeddings, self.block, strict=True):
            x = entry(op, x)
            for layer in layers:
                x = layer(op, x)
        return x


class PoolFormerBody(nn.Module):
    """PoolFormerModel: the last map, no pooler."""

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__()
        self.encoder = PoolFormerEncoder(cfg, dtype)
        self.cfg = cfg

    def image_dims(self):
        return HEIGHT, WIDTH

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, pixel_values)
        return Features(hidden, [BATCH, self.cfg.hidden_size, *FEATURE_DIMS])


class PoolFormerImageModel(VisionEncoderModel):
    """The classifier reads the spatial mean of `norm` (a one-group GroupNorm) of the map."""

    body_cls = PoolFormerBody
    body_name = "poolformer"

    def make_classifier(self, cfg, dtype, tensors):
        self.norm = GroupNorm(1, cfg.hidden_size, NORM_EPS, dtype)
        self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features):
        mean = op.ReduceMean(self.norm(op, features.hidden), [2, 3], keepdims=0)
        return self.classifier(op, mean)


FAMILIES = [
    Family(
        "poolformer",
        PoolFormerImageModel,
        "average-pooling token mixer and 1x1-Conv MLP behind one-group GroupNorms",
        ("sail/poolformer_s12",),
        rules=PoolFormerRules(),
        task="image-feature-extraction",
        category="vision",
        prefix="poolformer.",
    ),
]

"""SwiftFormer: a two-conv stem, stages of conv encoders (depthwise 3x3, BatchNorm, two 1x1
convs, a per-channel layer scale) ending in a block that adds "efficient additive attention"
(one global query from L2-normalized queries, scaling the normalized keys) and a conv MLP;
strided conv + BatchNorm between stages. The classifier averages a head and a distillation
head over the BatchNorm-ed mean map."""

from __future__ import annotations

from onnxscript import nn

from converter.components import Linear, activation
from converter.components.conv2d import BatchNorm2d, Conv2d
from converter.components.pooling import global_mean
from converter.config.convnet import ConvNetRules, stage_list
from converter.errors import ConfigError
from converter.models.convnet import (
    CONVNET_UNUSED,
    ConvNetBody,
    map_size,
    to_maps,
    to_tokens,
)
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH


class SwiftFormerRules(ConvNetRules):
    def read_extra(self, r):
        stages = len(stage_list(r, "depths", int))
        downsamples = stage_list(r, "downsamples", bool)
        if len(downsamples) < stages - 1:
            raise ConfigError(f"'downsamples' must cover the {stages - 1} steps between stages")
        return {
            "depths": stage_list(r, "depths", int),
            "embed_dims": stage_list(r, "embed_dims", int, stages),
            "downsamples": downsamples,
            "mlp_ratio": r.int("mlp_ratio", default=4),
            "hidden_act": r.str("hidden_act", default="gelu"),
            "down_patch_size": r.int("down_patch_size", default=3),
            "down_stride": r.int("down_stride", default=2),
            "down_pad": r.int("down_pad", default=1, lo=0),
            "use_layer_scale": r.bool("use_layer_scale", True),
            "eps": r.float("batch_norm_eps", default=1e-5),
        }

    def hidden_size(self, r, extra):
        return extra["embed_dims"][-1]


class PatchEmbedding(nn.Module):
    """nn.Sequential(conv, BatchNorm, ReLU, conv, BatchNorm, ReLU): `0`, `1`, `3`, `4`."""

    def __init__(self, cfg, dtype):
        super().__init__()
        extra, out = cfg.extra, cfg.extra["embed_dims"][0]
        setattr(self, "0", Conv2d(cfg.num_channels, out // 2, 3, dtype, 2, 1))
        setattr(self, "1", BatchNorm2d(out // 2, dtype, extra["eps"]))
        setattr(self, "3", Conv2d(out // 2, out, 3, dtype, 2, 1))
        setattr(self, "4", BatchNorm2d(out, dtype, extra["eps"]))

    def forward(self, op, x):
        for conv, norm in (("0", "1"), ("3", "4")):
            x = op.Relu(getattr(self, norm)(op, getattr(self, conv)(op, x)))
        return x


class Stem(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        self.patch_embedding = PatchEmbedding(cfg, dtype)

    def forward(self, op, x):
        return self.patch_embedding(op, x)


class Downsample(nn.Module):
    """SwiftFormerEmbeddings: a strided `proj` conv and its BatchNorm `norm`."""

    def __init__(self, extra, dtype, i):
        super().__init__()
        dims = extra["embed_dims"]
        kernel, stride, padding = extra["down_patch_size"], extra["down_stride"], extra["down_pad"]
        self.proj = Conv2d(dims[i], dims[i + 1], kernel, dtype, stride, padding)
        self.norm = BatchNorm2d(dims[i + 1], dtype, extra["eps"])

    def forward(self, op, x):
        return self.norm(op, self.proj(op, x))


class ConvEncoder(nn.Module):
    """x + layer_scale * pw2(GELU(pw1(BatchNorm(depthwise(x)))))"""

    def __init__(self, extra, dtype, dim, inner):
        super().__init__()
        self.depth_wise_conv = Conv2d(dim, dim, 3, dtype, 1, 1, groups=dim)
        self.norm = BatchNorm2d(dim, dtype, extra["eps"])
        self.point_wise_conv1 = Conv2d(dim, inner, 1, dtype)
        self.point_wise_conv2 = Conv2d(inner, dim, 1, dtype)
        self.layer_scale = nn.Parameter([dim, 1, 1], dtype)

    def forward(self, op, x):
        y = self.point_wise_conv1(op, self.norm(op, self.depth_wise_conv(op, x)))
        y = self.point_wise_conv2(op, activation(op, "gelu", y))
        return op.Add(x, op.Mul(self.layer_scale, y))


def l2_normalized(op, x):
    """F.normalize over the last axis: x / max(||x||, 1e-12)."""
    norm = op.Sqrt(op.ReduceSumSquare(x, [-1], keepdims=1))
    return op.Div(x, op.Max(norm, op.CastLike(1e-12, x)))


class AdditiveAttention(nn.Module):
    def __init__(self, dtype, dim):
        super().__init__()
        self.to_query = Linear(dim, dim, True, dtype)
        self.to_key = Linear(dim, dim, True, dtype)
        self.w_g = nn.Parameter([dim, 1], dtype)
        self.proj = Linear(dim, dim, True, dtype)
        self.final = Linear(dim, dim, True, dtype)
        self.scale = dim**-0.5

    def forward(self, op, x):
        query = l2_normalized(op, self.to_query(op, x))
        key = l2_normalized(op, self.to_key(op, x))
        weight = op.Mul(op.MatMul(query, self.w_g), op.CastLike(self.scale, x))
        # transformers' softmax runs over an axis of one: every weight becomes 1
        weight = op.Softmax(weight, axis=-1)
        overall = op.ReduceSum(op.Mul(weight, query), [1], keepdims=1)
        return self.final(op, op.Add(self.proj(op, op.Mul(overall, key)), query))


class Mlp(nn.Module):
    def __init__(self, extra, dtype, dim, inner):
        super().__init__()
        self.norm1 = BatchNorm2d(dim, dtype, extra["eps"])
        self.fc1 = Conv2d(dim, inner, 1, dtype)
        self.fc2 = Conv2d(inner, dim, 1, dtype)
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        return self.fc2(op, activation(op, self.act, self.fc1(op, self.norm1(op, x))))


class EncoderBlock(nn.Module):
    def __init__(self, extra, dtype, dim, inner):
        super().__init__()
        self.local_representation = ConvEncoder(extra, dtype, dim, dim)
        self.attn = AdditiveAttention(dtype, dim)
        self.linear = Mlp(extra, dtype, dim, inner)
        if extra["use_layer_scale"]:
            self.layer_scale_1 = nn.Parameter([dim, 1, 1], dtype)
            self.layer_scale_2 = nn.Parameter([dim, 1, 1], dtype)
        self.scaled = extra["use_layer_scale"]

    def forward(self, op, x):
        x = self.local_representation(op, x)
        attended = to_maps(op, self.attn(op, to_tokens(op, x)), map_size(op, x))
        if self.scaled:
            attended = op.Mul(self.layer_scale_1, attended)
        x = op.Add(x, attended)
        y = self.linear(op, x)
        return op.Add(x, op.Mul(self.layer_scale_2, y) if self.scaled else y)


class Stage(nn.Module):
    """Conv encoders, the last block an EncoderBlock."""

    def __init__(self, extra, dtype, i):
        super().__init__()
        dim, depth = extra["embed_dims"][i], extra["depths"][i]
        inner = dim * extra["mlp_ratio"]
        self.blocks = nn.ModuleList(
            EncoderBlock(extra, dtype, dim, inner)
            if j == depth - 1
            else ConvEncoder(extra, dtype, dim, inner)
            for j in range(depth)
        )

    def forward(self, op, x):
        for block in self.blocks:
            x = block(op, x)
        return x


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra, network = cfg.extra, []
        dims, last = extra["embed_dims"], len(extra["depths"]) - 1
        for i in range(last + 1):
            network.append(Stage(extra, dtype, i))
            if i < last and (extra["downsamples"][i] or dims[i] != dims[i + 1]):
                network.append(Downsample(extra, dtype, i))
        self.network = nn.ModuleList(network)

    def forward(self, op, x):
        for step in self.network:
            x = step(op, x)
        return x


class SwiftFormerBody(ConvNetBody):
    """SwiftFormerModel: the last map."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.patch_embed = Stem(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, self.patch_embed(op, pixel_values))
        return Features(hidden, [BATCH, self.cfg.hidden_size, *FEATURE_DIMS])


class SwiftFormerModel(VisionEncoderModel):
    """`norm` (BatchNorm) of the last map, its mean, then the mean of `head` and `dist_head`."""

    body_cls = SwiftFormerBody
    body_name = "swiftformer"

    def make_classifier(self, cfg, dtype, tensors):
        self.norm = BatchNorm2d(cfg.hidden_size, dtype, cfg.extra["eps"])
        self.head = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        self.dist_head = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features):
        pooled = global_mean(op, self.norm(op, features.hidden))
        both = op.Add(self.head(op, pooled), self.dist_head(op, pooled))
        return op.Div(both, op.CastLike(2.0, both))


FAMILIES = [
    Family(
        "swiftformer",
        SwiftFormerModel,
        "conv encoders and efficient additive attention; two classifier heads averaged",
        ("MBZUAI/swiftformer-xs",),
        rules=SwiftFormerRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"norm\..*", r"head\..*", r"dist_head\..*"),
        prefix="swiftformer.",
    ),
]

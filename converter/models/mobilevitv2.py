"""MobileViTV2: MobileViT whose patch transformer is separable "linear" attention over 1x1
convolutions (a softmax over patches of one context score, no heads) with one-group GroupNorms,
widths scaled by `width_multiplier`; no fusion with the block's input. The graph takes the
configured image size."""

from __future__ import annotations

from onnxscript import nn

from converter.components import activation
from converter.components.conv2d import Conv2d, GroupNorm
from converter.components.pooling import global_mean, pad
from converter.config.convnet import ConvNetRules, make_divisible, stage_list
from converter.errors import ConfigError
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody
from converter.models.convnext import FEATURE_DIMS
from converter.models.mobilevit import InvertedResidual, MobileNetLayer, conv, halved
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH


class MobileViTV2Rules(ConvNetRules):
    def read_extra(self, r):
        extra = {
            "n_attn_blocks": stage_list(r, "n_attn_blocks", int, 3),
            "base_attn_unit_dims": stage_list(r, "base_attn_unit_dims", int, 3),
            "width_multiplier": r.float("width_multiplier", default=1.0),
            "ffn_multiplier": r.int("ffn_multiplier", default=2),
            "expand_ratio": r.float("expand_ratio", default=2.0),
            "hidden_act": r.str("hidden_act", default="swish"),
            "conv_kernel_size": r.int("conv_kernel_size", default=3),
            "patch_size": r.int("patch_size", default=2),
            "output_stride": r.int("output_stride", default=32),
            "eps": r.float("layer_norm_eps", default=1e-5),
        }
        if extra["output_stride"] not in (8, 16, 32):
            r.refuse("output_stride", "MobileViTV2 dilates its last stages for 8 or 16, else 32")
        if not r.has("image_size"):
            raise ConfigError("'image_size' is missing: the graph is built for it")
        return extra

    def hidden_size(self, r, extra):
        return widths(extra)[5]


def widths(extra) -> list[int]:
    """The stem's and each of the five layers' channels."""
    w = extra["width_multiplier"]
    first = make_divisible(max(16, min(64, 32 * w)), 8, 16)
    return [first, make_divisible(64 * w, 16)] + [
        make_divisible(c * w, 8) for c in (128, 256, 384, 512)
    ]


class LinearSelfAttention(nn.Module):
    """qkv_proj gives one context score per position, keys and values; the scores' softmax
    over patches weights the keys into one context vector, which scales relu(values)."""

    def __init__(self, dtype, width):
        super().__init__()
        self.qkv_proj = Conv1x1(width, 1 + 2 * width, dtype)
        self.out_proj = Conv1x1(width, width, dtype)
        self.width = width

    def forward(self, op, x):
        sizes = op.Constant(value_ints=[1, self.width, self.width])
        scores, keys, values = op.Split(self.qkv_proj(op, x), sizes, axis=1, _outputs=3)
        context = op.ReduceSum(op.Mul(keys, op.Softmax(scores, axis=-1)), [-1], keepdims=1)
        return self.out_proj(op, op.Mul(op.Relu(values), context))


class Conv1x1(nn.Module):
    """A 1x1 `convolution` with bias (MobileViTV2ConvLayer without norm or activation)."""

    def __init__(self, in_ch, out_ch, dtype):
        super().__init__()
        self.convolution = Conv2d(in_ch, out_ch, 1, dtype)

    def forward(self, op, x):
        return self.convolution(op, x)


class FFN(nn.Module):
    def __init__(self, extra, dtype, width, inner):
        super().__init__()
        self.conv1 = Conv1x1(width, inner, dtype)
        self.conv2 = Conv1x1(inner, width, dtype)
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        return self.conv2(op, activation(op, self.act, self.conv1(op, x)))


class TransformerLayer(nn.Module):
    def __init__(self, extra, dtype, width, inner):
        super().__init__()
        self.layernorm_before = GroupNorm(1, width, extra["eps"], dtype)
        self.attention = LinearSelfAttention(dtype, width)
        self.layernorm_after = GroupNorm(1, width, extra["eps"], dtype)
        self.ffn = FFN(extra, dtype, width, inner)

    def forward(self, op, x):
        x = op.Add(self.attention(op, self.layernorm_before(op, x)), x)
        return op.Add(self.ffn(op, self.layernorm_after(op, x)), x)


class Transformer(nn.Module):
    def __init__(self, extra, dtype, width, count):
        super().__init__()
        inner = extra["ffn_multiplier"] * width // 16 * 16
        self.layer = nn.ModuleList(
            TransformerLayer(extra, dtype, width, inner) for _ in range(count)
        )

    def forward(self, op, x):
        for layer in self.layer:
            x = layer(op, x)
        return x


class MobileViTV2Layer(nn.Module):
    """A strided inverted residual, a depthwise kxk conv and a 1x1 conv, the transformer over
    unfolded patches [batch, width, patch area, patches], its `layernorm`, folding, and a 1x1
    `conv_projection`. Rows and columns past the last whole patch are dropped, and come back as
    zeros (torch's unfold and fold)."""

    def __init__(self, cfg, dtype, in_ch, out_ch, width, count, side, dilation=1):
        super().__init__()
        extra, k = cfg.extra, cfg.extra["conv_kernel_size"]
        self.downsampling_layer = InvertedResidual(
            extra, dtype, in_ch, out_ch, 2 if dilation == 1 else 1, max(dilation // 2, 1)
        )
        self.conv_kxk = conv(extra, dtype, out_ch, out_ch, k, groups=out_ch)
        self.conv_1x1 = conv(extra, dtype, out_ch, width, 1, norm=False, act=False)
        self.transformer = Transformer(extra, dtype, width, count)
        self.layernorm = GroupNorm(1, width, extra["eps"], dtype)
        self.conv_projection = conv(extra, dtype, width, out_ch, 1, act=False)
        self.patch, self.width, self.side = extra["patch_size"], width, side

    def forward(self, op, x, kernel=None):
        x = self.downsampling_layer(op, x)
        x = self.conv_1x1(op, self.conv_kxk(op, x))
        p, width = self.patch, self.width
        rows, columns = self.side[0] // p, self.side[1] // p
        if (rows * p, columns * p) != tuple(self.side):
            x = op.Slice(x, [0, 0], [rows * p, columns * p], [2, 3])
        x = op.Reshape(x, [0, width, rows, p, columns, p])
        x = op.Transpose(x, perm=[0, 1, 3, 5, 2, 4])
        patches = op.Reshape(x, [0, width, p * p, rows * columns])
        patches = self.layernorm(op, self.transformer(op, patches))
        x = op.Reshape(patches, [0, width, p, p, rows, columns])
        x = op.Transpose(x, perm=[0, 1, 4, 2, 5, 3])
        x = op.Reshape(x, [0, width, rows * p, columns * p])
        x = pad(op, x, 0, 0, self.side[0] - rows * p, self.side[1] - columns * p)
        return self.conv_projection(op, x)


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra, dims = cfg.extra, widths(cfg.extra)
        w, stride = extra["width_multiplier"], extra["output_stride"]
        side = halved(halved(cfg.image_size))  # the stem, then layer 2
        layers = [
            MobileNetLayer(extra, dtype, dims[0], dims[1], 1, 1),
            MobileNetLayer(extra, dtype, dims[1], dims[2], 2, 2),
        ]
        dilation = 1
        for i in range(3):
            if (i == 1 and stride == 8) or (i == 2 and stride in (8, 16)):
                dilation *= 2
            else:
                side = halved(side)
            width = make_divisible(extra["base_attn_unit_dims"][i] * w, 8)
            count = extra["n_attn_blocks"][i]
            layers.append(
                MobileViTV2Layer(cfg, dtype, dims[i + 2], dims[i + 3], width, count, side, dilation)
            )
        self.layer = nn.ModuleList(layers)

    def forward(self, op, x):
        for layer in self.layer:
            x = layer(op, x, None)
        return x


class MobileViTV2Body(ConvNetBody):
    """MobileViTV2Model: the last map and its mean."""

    static = True

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.conv_stem = conv(cfg.extra, dtype, cfg.num_channels, widths(cfg.extra)[0], 3, 2)
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, self.conv_stem(op, pixel_values))
        size = self.cfg.hidden_size
        return Features(
            hidden, [BATCH, size, *FEATURE_DIMS], global_mean(op, hidden), [BATCH, size]
        )


class MobileViTV2Model(VisionEncoderModel):
    body_cls = MobileViTV2Body
    body_name = "mobilevitv2"


FAMILIES = [
    Family(
        "mobilevitv2",
        MobileViTV2Model,
        "MobileViT with separable linear attention over 1x1 convs and GroupNorm",
        ("apple/mobilevitv2-1.0-imagenet1k-256",),
        rules=MobileViTV2Rules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"segmentation_head\..*"),
        prefix="mobilevitv2.",
    ),
]

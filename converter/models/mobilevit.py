"""MobileViT: MobileNetV2 inverted residuals, and blocks that cut the map into `patch_size`
patches and run ViT layers across patches (each pixel position of a patch attending to the same
position in the others) before folding back and fusing with the block's input. Maps whose sides
the patch does not divide are resized (bilinear) to the next multiple and back, as transformers
does; the graph takes the configured image size."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm
from converter.components.conv_layers import ConvNorm
from converter.components.encoder_attention import encoder_attention
from converter.components.pooling import global_mean
from converter.config.convnet import ConvNetRules, make_divisible, stage_list
from converter.config.vision import VisionConfig
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel
from converter.models.vision_transformer import ViTLayer
from converter.registry import Family
from converter.tasks.encoding import BATCH


class MobileViTRules(ConvNetRules):
    def read_extra(self, r):
        extra = {
            "hidden_sizes": stage_list(r, "hidden_sizes", int, 3),
            "neck_hidden_sizes": stage_list(r, "neck_hidden_sizes", int, 7),
            "num_attention_heads": r.int("num_attention_heads", default=4),
            "mlp_ratio": r.float("mlp_ratio", default=2.0),
            "expand_ratio": r.float("expand_ratio", default=4.0),
            "hidden_act": r.str("hidden_act", default="silu"),
            "conv_kernel_size": r.int("conv_kernel_size", default=3),
            "patch_size": r.int("patch_size", default=2),
            "output_stride": r.int("output_stride", default=32),
            "eps": r.float("layer_norm_eps", default=1e-5),
            "qkv_bias": r.bool("qkv_bias", True),
        }
        if extra["output_stride"] not in (8, 16, 32):
            r.refuse("output_stride", "MobileViT dilates its last stages for 8 or 16, else 32")
        for width in extra["hidden_sizes"]:
            if width % extra["num_attention_heads"]:
                raise ConfigError(
                    f"a transformer of width {width} cannot split into "
                    f"{extra['num_attention_heads']} heads"
                )
        if not r.has("image_size"):
            raise ConfigError("'image_size' is missing: the graph is built for it")
        return extra

    def hidden_size(self, r, extra):
        return extra["neck_hidden_sizes"][6]


def conv(extra, dtype, in_ch, out_ch, kernel, stride=1, groups=1, dilation=1, **kw):
    """MobileViTConvLayer: a bias-free conv, BatchNorm and the activation (`norm` / `act`
    False: without)."""
    return ConvNorm(
        in_ch,
        out_ch,
        kernel,
        dtype,
        stride=stride,
        padding=(kernel - 1) // 2 * dilation,
        groups=groups,
        dilation=dilation,
        eps=1e-5 if kw.get("norm", True) else None,
        act=extra["hidden_act"] if kw.get("act", True) else None,
    )


class InvertedResidual(nn.Module):
    def __init__(self, extra, dtype, in_ch, out_ch, stride, dilation=1):
        super().__init__()
        expanded = make_divisible(round(in_ch * extra["expand_ratio"]), 8)
        self.expand_1x1 = conv(extra, dtype, in_ch, expanded, 1)
        self.conv_3x3 = conv(extra, dtype, expanded, expanded, 3, stride, expanded, dilation)
        self.reduce_1x1 = conv(extra, dtype, expanded, out_ch, 1, act=False)
        self.residual = stride == 1 and in_ch == out_ch

    def forward(self, op, x):
        y = self.reduce_1x1(op, self.conv_3x3(op, self.expand_1x1(op, x)))
        return op.Add(x, y) if self.residual else y


class MobileNetLayer(nn.Module):
    def __init__(self, extra, dtype, in_ch, out_ch, stride, count):
        super().__init__()
        self.layer = nn.ModuleList(
            InvertedResidual(
                extra, dtype, in_ch if i == 0 else out_ch, out_ch, stride if i == 0 else 1
            )
            for i in range(count)
        )

    def forward(self, op, x, kernel):
        for block in self.layer:
            x = block(op, x)
        return x


class Transformer(nn.Module):
    """`layer`: ViT layers (pre-norm) of the block's width."""

    def __init__(self, cfg, dtype, width, count):
        super().__init__()
        extra = cfg.extra
        layer_cfg = VisionConfig(
            model_type=cfg.model_type,
            image_size=cfg.image_size,
            patch_size=(extra["patch_size"],) * 2,
            num_channels=width,
            widths=(width,),
            depths=(count,),
            heads=(extra["num_attention_heads"],),
            intermediate_sizes=(int(width * extra["mlp_ratio"]),),
            norm_eps=extra["eps"],
            activation=extra["hidden_act"],
            qkv_bias=extra["qkv_bias"],
            num_labels=cfg.num_labels,
            extra={},
        )
        self.layer = nn.ModuleList(ViTLayer(layer_cfg, dtype) for _ in range(count))

    def forward(self, op, x, kernel):
        for layer in self.layer:
            x = layer(op, x, kernel)
        return x


class MobileViTLayer(nn.Module):
    """A strided inverted residual, a kxk and a 1x1 conv, the transformer over unfolded patches,
    its `layernorm`, folding, a 1x1 projection and a kxk `fusion` of it with the block's input."""

    def __init__(self, cfg, dtype, in_ch, out_ch, width, count, side, dilation=1):
        super().__init__()
        extra, k = cfg.extra, cfg.extra["conv_kernel_size"]
        self.downsampling_layer = InvertedResidual(
            extra, dtype, in_ch, out_ch, 2 if dilation == 1 else 1, max(dilation // 2, 1)
        )
        self.conv_kxk = conv(extra, dtype, out_ch, out_ch, k)
        self.conv_1x1 = conv(extra, dtype, out_ch, width, 1, norm=False, act=False)
        self.transformer = Transformer(cfg, dtype, width, count)
        self.layernorm = LayerNorm(width, extra["eps"], dtype)
        self.conv_projection = conv(extra, dtype, width, out_ch, 1)
        self.fusion = conv(extra, dtype, 2 * out_ch, out_ch, k)
        self.patch, self.width, self.count = extra["patch_size"], width, count
        self.side = side  # the map's (height, width) at this block

    def expected_fusions(self, plan) -> dict[str, int]:
        # every layer's two sums feed a norm: layernorm_after, the next layernorm_before or the
        # block's layernorm
        return {"skip_norms": 2 * self.count if plan.has(SKIP_NORM) else 0}

    def unfold(self, op, x):
        """[batch, width, H, W] -> [batch * patch area, patches, width]"""
        p, (rows, columns) = self.patch, self.grid()
        x = op.Reshape(x, [0, 0, rows, p, columns, p])
        x = op.Transpose(x, perm=[0, 3, 5, 2, 4, 1])
        return op.Reshape(x, [-1, rows * columns, self.width])

    def fold(self, op, patches):
        p, (rows, columns) = self.patch, self.grid()
        x = op.Reshape(patches, [-1, p, p, rows, columns, self.width])
        x = op.Transpose(x, perm=[0, 5, 3, 1, 4, 2])
        return op.Reshape(x, [0, 0, rows * p, columns * p])

    def grid(self) -> tuple[int, int]:
        return (-(-self.side[0] // self.patch), -(-self.side[1] // self.patch))

    def resized(self) -> bool:
        rows, columns = self.grid()
        return (rows * self.patch, columns * self.patch) != tuple(self.side)

    def forward(self, op, x, kernel):
        x = self.downsampling_layer(op, x)
        residual = x
        x = self.conv_1x1(op, self.conv_kxk(op, x))
        rows, columns = self.grid()
        padded = (rows * self.patch, columns * self.patch)
        if self.resized():
            x = resize(op, x, padded)
        patches = self.layernorm(op, self.transformer(op, self.unfold(op, x), kernel))
        x = self.fold(op, patches)
        if self.resized():
            x = resize(op, x, self.side)
        x = self.conv_projection(op, x)
        return self.fusion(op, op.Concat(residual, x, axis=1))


def resize(op, x, size: tuple[int, int]):
    """torch's bilinear interpolate (align_corners=False) of x to (height, width) `size`."""
    sizes = op.Concat(op.Shape(x, start=0, end=2), list(size), axis=0)
    return op.Resize(
        x, None, None, sizes, mode="linear", coordinate_transformation_mode="half_pixel"
    )


def halved(side: tuple[int, int]) -> tuple[int, int]:
    """A map's size after a stride-2 conv padded by half its 3x3 kernel."""
    return ((side[0] + 1) // 2, (side[1] + 1) // 2)


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra = cfg.extra
        necks, widths = extra["neck_hidden_sizes"], extra["hidden_sizes"]
        stride = extra["output_stride"]
        side = halved(halved(cfg.image_size))  # the stem, then layer 2
        layers = [
            MobileNetLayer(extra, dtype, necks[0], necks[1], 1, 1),
            MobileNetLayer(extra, dtype, necks[1], necks[2], 2, 3),
        ]
        dilation = 1
        for i, count in enumerate((2, 4, 3)):
            if (i == 1 and stride == 8) or (i == 2 and stride in (8, 16)):
                dilation *= 2
            else:
                side = halved(side)
            layers.append(
                MobileViTLayer(
                    cfg, dtype, necks[i + 2], necks[i + 3], widths[i], count, side, dilation
                )
            )
        self.layer = nn.ModuleList(layers)

    def forward(self, op, x, kernel):
        for layer in self.layer:
            x = layer(op, x, kernel)
        return x


class MobileViTBody(ConvNetBody):
    """MobileViTModel: the expanded last map (`conv_1x1_exp`) and its mean."""

    static = True

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        extra, necks = cfg.extra, cfg.extra["neck_hidden_sizes"]
        self.conv_stem = conv(extra, dtype, cfg.num_channels, necks[0], 3, stride=2)
        self.encoder = Encoder(cfg, dtype)
        self.conv_1x1_exp = conv(extra, dtype, necks[5], necks[6], 1)

    def forward(self, op, pixel_values) -> Features:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        x = self.encoder(op, self.conv_stem(op, pixel_values), kernel)
        hidden = self.conv_1x1_exp(op, x)
        size = self.cfg.hidden_size
        return Features(
            hidden, [BATCH, size, *FEATURE_DIMS], global_mean(op, hidden), [BATCH, size]
        )


class MobileViTModel(VisionEncoderModel):
    body_cls = MobileViTBody
    body_name = "mobilevit"


FAMILIES = [
    Family(
        "mobilevit",
        MobileViTModel,
        "inverted residuals and ViT layers across unfolded patches, fused back into the map",
        ("apple/mobilevit-small",),
        rules=MobileViTRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"segmentation_head\..*"),
        prefix="mobilevit.",
    ),
]

"""HGNetV2 (PP-HGNetV2): a stem whose two branches (a max pool and two 2x2 convs) are
concatenated, then stages of blocks that concatenate every conv's output and aggregate them with
two 1x1 convs (a residual past a stage's first block); light blocks split each conv into 1x1 and
depthwise. Optional learnable affine steps after activations. Classification only (transformers
has no bare HGNetV2 model)."""

from __future__ import annotations

from onnxscript import nn

from converter.components import Linear
from converter.components.batch_norm import BATCH_NORM_UNUSED
from converter.components.conv_layers import ConvNorm
from converter.components.pooling import global_mean, pad
from converter.config.convnet import ConvNetRules, stage_list
from converter.errors import ConfigError
from converter.models.convnet import ClassifierOnly
from converter.registry import Family

STAGE_INTS = (
    "stage_in_channels",
    "stage_mid_channels",
    "stage_out_channels",
    "stage_num_blocks",
    "stage_downsample_strides",
    "stage_kernel_size",
    "stage_numb_of_layers",
)


class HGNetV2Rules(ConvNetRules):
    def read_extra(self, r):
        stages = len(stage_list(r, "stage_in_channels", int))
        extra = {key: stage_list(r, key, int, stages) for key in STAGE_INTS}
        extra["stage_downsample"] = stage_list(r, "stage_downsample", bool, stages)
        extra["stage_light_block"] = stage_list(r, "stage_light_block", bool, stages)
        extra["stem_channels"] = stage_list(r, "stem_channels", int, 3)
        extra["stem_strides"] = stage_list(r, "stem_strides", int, 5)
        extra["hidden_act"] = r.str("hidden_act", default="relu")
        extra["use_learnable_affine_block"] = r.bool("use_learnable_affine_block", False)
        if extra["stem_channels"][0] != r.int("num_channels", default=3):
            raise ConfigError("'stem_channels' must start with 'num_channels'")
        return extra

    def hidden_size(self, r, extra):
        return extra["stage_out_channels"][-1]


class AffineBlock(nn.Module):
    """HGNetV2LearnableAffineBlock: scale * x + bias, one trained number each."""

    def __init__(self, dtype):
        super().__init__()
        self.scale = nn.Parameter([1], dtype)
        self.bias = nn.Parameter([1], dtype)

    def forward(self, op, x):
        return op.Add(op.Mul(self.scale, x), self.bias)


class ConvLayer(ConvNorm):
    """HGNetV2ConvLayer: conv padded by (kernel - 1) // 2, BatchNorm, the activation and, after
    an activation, the optional `lab`."""

    def __init__(self, extra, dtype, in_ch, out_ch, kernel, stride=1, groups=1, act="relu"):
        super().__init__(
            in_ch,
            out_ch,
            kernel,
            dtype,
            stride=stride,
            padding=(kernel - 1) // 2,
            groups=groups,
            act=act,
        )
        affine = act is not None and extra["use_learnable_affine_block"]
        self.lab = AffineBlock(dtype) if affine else None

    def forward(self, op, x):
        x = super().forward(op, x)
        return x if self.lab is None else self.lab(op, x)


class ConvLayerLight(nn.Module):
    def __init__(self, extra, dtype, in_ch, out_ch, kernel):
        super().__init__()
        self.conv1 = ConvLayer(extra, dtype, in_ch, out_ch, 1, act=None)
        self.conv2 = ConvLayer(extra, dtype, out_ch, out_ch, kernel, groups=out_ch)

    def forward(self, op, x):
        return self.conv2(op, self.conv1(op, x))


class Embeddings(nn.Module):
    def __init__(self, extra, dtype):
        super().__init__()
        (first, mid, out), strides = extra["stem_channels"], extra["stem_strides"]
        act = extra["hidden_act"]
        self.stem1 = ConvLayer(extra, dtype, first, mid, 3, strides[0], act=act)
        self.stem2a = ConvLayer(extra, dtype, mid, mid // 2, 2, strides[1], act=act)
        self.stem2b = ConvLayer(extra, dtype, mid // 2, mid, 2, strides[2], act=act)
        self.stem3 = ConvLayer(extra, dtype, mid * 2, mid, 3, strides[3], act=act)
        self.stem4 = ConvLayer(extra, dtype, mid, out, 1, strides[4], act=act)

    def forward(self, op, x):
        x = pad(op, self.stem1(op, x), 0, 0, 1, 1)
        branch = self.stem2b(op, pad(op, self.stem2a(op, x), 0, 0, 1, 1))
        pooled = op.MaxPool(x, kernel_shape=[2, 2], strides=[1, 1], ceil_mode=1)
        x = self.stem3(op, op.Concat(pooled, branch, axis=1))
        return self.stem4(op, x)


class Aggregation(nn.Module):
    """nn.Sequential of the squeeze and excitation 1x1 convs: `0` and `1`."""

    def __init__(self, extra, dtype, total, out_ch):
        super().__init__()
        setattr(self, "0", ConvLayer(extra, dtype, total, out_ch // 2, 1))
        setattr(self, "1", ConvLayer(extra, dtype, out_ch // 2, out_ch, 1))

    def forward(self, op, x):
        return getattr(self, "1")(op, getattr(self, "0")(op, x))


class BasicLayer(nn.Module):
    def __init__(self, extra, dtype, i, in_ch, residual):
        super().__init__()
        mid, out = extra["stage_mid_channels"][i], extra["stage_out_channels"][i]
        kernel, count = extra["stage_kernel_size"][i], extra["stage_numb_of_layers"][i]
        light = extra["stage_light_block"][i]
        layers = []
        for k in range(count):
            width = in_ch if k == 0 else mid
            if light:
                layers.append(ConvLayerLight(extra, dtype, width, mid, kernel))
            else:
                layers.append(ConvLayer(extra, dtype, width, mid, kernel))
        self.layers = nn.ModuleList(layers)
        self.aggregation = Aggregation(extra, dtype, in_ch + count * mid, out)
        self.residual = residual

    def forward(self, op, x):
        outputs, y = [x], x
        for layer in self.layers:
            y = layer(op, y)
            outputs.append(y)
        y = self.aggregation(op, op.Concat(*outputs, axis=1))
        return op.Add(y, x) if self.residual else y


class Stage(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        in_ch, out = extra["stage_in_channels"][i], extra["stage_out_channels"][i]
        stride = extra["stage_downsample_strides"][i]
        self.downsample = (
            ConvLayer(extra, dtype, in_ch, in_ch, 3, stride, groups=in_ch, act=None)
            if extra["stage_downsample"][i]
            else None
        )
        self.blocks = nn.ModuleList(
            BasicLayer(extra, dtype, i, in_ch if j == 0 else out, j != 0)
            for j in range(extra["stage_num_blocks"][i])
        )

    def forward(self, op, x):
        if self.downsample is not None:
            x = self.downsample(op, x)
        for block in self.blocks:
            x = block(op, x)
        return x


class Encoder(nn.Module):
    def __init__(self, extra, dtype):
        super().__init__()
        stages = range(len(extra["stage_in_channels"]))
        self.stages = nn.ModuleList(Stage(extra, dtype, i) for i in stages)

    def forward(self, op, x):
        for stage in self.stages:
            x = stage(op, x)
        return x


class HGNetV2Model(ClassifierOnly):
    """HGNetV2ForImageClassification: `embedder`, `encoder`, and `fc` over the mean of the
    last map (its `classifier` holds only the pool and flatten)."""

    def __init__(self, cfg, dtype, ep, task, tensors):
        super().__init__(cfg, dtype, ep, task, tensors)
        self.embedder = Embeddings(cfg.extra, dtype)
        self.encoder = Encoder(cfg.extra, dtype)
        self.fc = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def logits(self, op, pixel_values):
        hidden = self.encoder(op, self.embedder(op, pixel_values))
        return self.fc(op, global_mean(op, hidden))


FAMILIES = [
    Family(
        "hgnet_v2",
        HGNetV2Model,
        "stem with a pooled and a conv branch, blocks aggregating every conv's output",
        (),
        rules=HGNetV2Rules(),
        task="image-classification",
        category="vision",
        unused=(BATCH_NORM_UNUSED,),
    ),
]

"""PVTv2: PVT with overlapping patch convs and no position table (any image size): each MLP
runs a depthwise 3x3 conv between its Linears, each stage ends in a LayerNorm and returns a map.
`linear_attention` pools keys and values to 7x7 instead of striding them."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.encoder_attention import encoder_attention
from converter.components.pooling import adaptive_mean, global_mean
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.convnet import (
    CONVNET_UNUSED,
    ConvNetBody,
    map_size,
    to_maps,
    to_tokens,
)
from converter.models.convnext import FEATURE_DIMS
from converter.models.pvt import PvtRules
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH


class PvtV2Rules(PvtRules):
    reduction_key = "sr_ratios"

    def read_extra(self, r):
        return {**super().read_extra(r), "linear_attention": r.bool("linear_attention", False)}


class PatchEmbeddings(nn.Module):
    """An overlapping conv (padding half its kernel), then LayerNorm over the tokens; returns
    them and the map's shape."""

    def __init__(self, cfg, dtype, i):
        super().__init__()
        extra = cfg.extra
        width, kernel = extra["hidden_sizes"][i], extra["patch_sizes"][i]
        in_channels = cfg.num_channels if i == 0 else extra["hidden_sizes"][i - 1]
        self.proj = Conv2d(in_channels, width, kernel, dtype, extra["strides"][i], kernel // 2)
        self.layer_norm = LayerNorm(width, extra["eps"], dtype)

    def forward(self, op, x):
        maps = self.proj(op, x)
        return self.layer_norm(op, to_tokens(op, maps)), map_size(op, maps)


class SelfAttention(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        width, bias = extra["hidden_sizes"][i], extra["qkv_bias"]
        self.query = Linear(width, width, bias, dtype)
        self.key = Linear(width, width, bias, dtype)
        self.value = Linear(width, width, bias, dtype)
        self.proj = Linear(width, width, True, dtype)
        self.linear = extra["linear_attention"]
        reduction = 1 if self.linear else extra["reductions"][i]
        self.reduces = self.linear or reduction > 1
        if self.reduces:
            self.spatial_reduction = Conv2d(width, width, reduction, dtype, reduction)
            self.layer_norm = LayerNorm(width, extra["eps"], dtype)
        self.heads = extra["num_attention_heads"][i]
        self.scale = (width // self.heads) ** -0.5

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def reduce(self, op, x, grid):
        maps = to_maps(op, x, grid)
        if self.linear:
            maps = adaptive_mean(op, maps, (7, 7))
        reduced = self.layer_norm(op, to_tokens(op, self.spatial_reduction(op, maps)))
        return activation(op, "gelu", reduced) if self.linear else reduced

    def forward(self, op, x, grid, kernel):
        q = self.query(op, x)
        source = self.reduce(op, x, grid) if self.reduces else x
        k, v = self.key(op, source), self.value(op, source)
        return self.proj(op, kernel(op, q, k, v, self.heads, self.scale))


class DepthwiseConv(nn.Module):
    def __init__(self, width, dtype):
        super().__init__()
        self.dwconv = Conv2d(width, width, 3, dtype, 1, 1, groups=width)

    def forward(self, op, x, grid):
        return to_tokens(op, self.dwconv(op, to_maps(op, x, grid)))


class ConvFeedForward(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        width = extra["hidden_sizes"][i]
        inner = int(width * extra["mlp_ratios"][i])
        self.dense1 = Linear(width, inner, True, dtype)
        self.dwconv = DepthwiseConv(inner, dtype)
        self.dense2 = Linear(inner, width, True, dtype)
        self.act, self.relu = extra["hidden_act"], extra["linear_attention"]

    def forward(self, op, x, grid):
        x = self.dense1(op, x)
        x = op.Relu(x) if self.relu else x
        x = activation(op, self.act, self.dwconv(op, x, grid))
        return self.dense2(op, x)


class Block(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        width, eps = extra["hidden_sizes"][i], extra["eps"]
        self.layer_norm_1 = LayerNorm(width, eps, dtype)
        self.attention = SelfAttention(extra, dtype, i)
        self.layer_norm_2 = LayerNorm(width, eps, dtype)
        self.mlp = ConvFeedForward(extra, dtype, i)

    def forward(self, op, x, grid, kernel):
        x = op.Add(self.attention(op, self.layer_norm_1(op, x), grid, kernel), x)
        return op.Add(x, self.mlp(op, self.layer_norm_2(op, x), grid))


class EncoderLayer(nn.Module):
    """A stage: patch embedding, blocks, LayerNorm; back to a map."""

    def __init__(self, cfg, dtype, i):
        super().__init__()
        extra = cfg.extra
        self.patch_embedding = PatchEmbeddings(cfg, dtype, i)
        self.blocks = nn.ModuleList([Block(extra, dtype, i) for _ in range(extra["depths"][i])])
        self.layer_norm = LayerNorm(extra["hidden_sizes"][i], extra["eps"], dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # the first layer_norm_1 reads the patch embedding; every sum feeds a norm
        return {"skip_norms": 2 * len(self.blocks) if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, kernel):
        tokens, grid = self.patch_embedding(op, x)
        for block in self.blocks:
            tokens = block(op, tokens, grid, kernel)
        return to_maps(op, self.layer_norm(op, tokens), grid)


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        stages = range(len(cfg.extra["depths"]))
        self.layers = nn.ModuleList([EncoderLayer(cfg, dtype, i) for i in stages])

    def forward(self, op, x, kernel):
        for layer in self.layers:
            x = layer(op, x, kernel)
        return x


class PvtV2Body(ConvNetBody):
    """PvtV2Model: the last stage's map."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        hidden = self.encoder(op, pixel_values, kernel)
        return Features(hidden, [BATCH, self.cfg.hidden_size, *FEATURE_DIMS])


class PvtV2Model(VisionEncoderModel):
    body_cls = PvtV2Body
    body_name = "pvt_v2"

    def classify(self, op, features):
        return self.classifier(op, global_mean(op, features.hidden))


FAMILIES = [
    Family(
        "pvt_v2",
        PvtV2Model,
        "PVT with overlapping patch convs, depthwise convs in the MLPs, no position table",
        ("OpenGVLab/pvt_v2_b0",),
        rules=PvtV2Rules(),
        task="image-feature-extraction",
        category="vision",
        unused=CONVNET_UNUSED,
        prefix="pvt_v2.",
    ),
]

"""CvT: stages of a strided conv embedding (LayerNorm over its channels), then pre-norm layers
whose queries, keys and values are each a depthwise conv + BatchNorm of the map (keys and values
strided) and a Linear; the last stage may lead with a cls token that skips the convolutions.
Attention scales by the whole width, not a head's."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.conv_layers import ConvNorm
from converter.components.encoder_attention import encoder_attention
from converter.config.convnet import ConvNetRules, stage_list
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.convnet import (
    CONVNET_UNUSED,
    ConvNetBody,
    map_size,
    to_maps,
    to_tokens,
)
from converter.models.convnext import FEATURE_DIMS
from converter.models.vision import Features, VisionEncoderModel, batch_of, first_token
from converter.registry import Family
from converter.tasks.encoding import BATCH

INT64_MAX = (1 << 63) - 1
NORM_EPS = 1e-5  # CvT's LayerNorms keep torch's default (config.layer_norm_eps is not read)
PER_STAGE_INTS = (
    "patch_sizes",
    "patch_stride",
    "embed_dim",
    "num_heads",
    "depth",
    "kernel_qkv",
    "stride_kv",
    "stride_q",
)


class CvtRules(ConvNetRules):
    def read_extra(self, r):
        stages = len(stage_list(r, "depth", int))
        extra = {key: stage_list(r, key, int, stages) for key in PER_STAGE_INTS}
        for key in ("patch_padding", "padding_kv", "padding_q"):
            extra[key] = tuple(int(p) for p in stage_list(r, key, float, stages))
        extra["mlp_ratio"] = stage_list(r, "mlp_ratio", float, stages)
        extra["qkv_bias"] = stage_list(r, "qkv_bias", bool, stages)
        extra["cls_token"] = stage_list(r, "cls_token", bool, stages)
        methods = stage_list(r, "qkv_projection_method", str, stages)
        if set(methods) != {"dw_bn"}:
            r.refuse("qkv_projection_method", "transformers' CvT runs 'dw_bn' projections only")
        if any(extra["cls_token"][:-1]):
            r.refuse("cls_token", "transformers sizes the cls token for the last stage only")
        return extra

    def hidden_size(self, r, extra):
        return extra["embed_dim"][-1]


def split_first(op, tokens):
    """[batch, 1 + n, width] -> the first token [batch, 1, width], the others."""
    return op.Slice(tokens, [0], [1], [1]), op.Slice(tokens, [1], [INT64_MAX], [1])


class ConvEmbeddings(nn.Module):
    def __init__(self, extra, dtype, i, in_channels):
        super().__init__()
        width = extra["embed_dim"][i]
        self.projection = Conv2d(
            in_channels,
            width,
            extra["patch_sizes"][i],
            dtype,
            extra["patch_stride"][i],
            extra["patch_padding"][i],
        )
        self.normalization = LayerNorm(width, NORM_EPS, dtype)

    def forward(self, op, x):
        maps = self.projection(op, x)
        return self.normalization(op, to_tokens(op, maps)), map_size(op, maps)


class Embeddings(nn.Module):
    def __init__(self, extra, dtype, i, in_channels):
        super().__init__()
        self.convolution_embeddings = ConvEmbeddings(extra, dtype, i, in_channels)

    def forward(self, op, x):
        return self.convolution_embeddings(op, x)


class ConvProjection(nn.Module):
    """`convolution_projection`: the depthwise conv and its BatchNorm, as tokens."""

    def __init__(self, width, kernel, padding, stride, dtype):
        super().__init__()
        self.convolution_projection = ConvNorm(
            width, width, kernel, dtype, stride=stride, padding=padding, groups=width
        )

    def forward(self, op, maps):
        return to_tokens(op, self.convolution_projection(op, maps))


class SelfAttention(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        width, kernel = extra["embed_dim"][i], extra["kernel_qkv"][i]
        q_args = (kernel, extra["padding_q"][i], extra["stride_q"][i], dtype)
        kv_args = (kernel, extra["padding_kv"][i], extra["stride_kv"][i], dtype)
        self.convolution_projection_query = ConvProjection(width, *q_args)
        self.convolution_projection_key = ConvProjection(width, *kv_args)
        self.convolution_projection_value = ConvProjection(width, *kv_args)
        bias = extra["qkv_bias"][i]
        self.projection_query = Linear(width, width, bias, dtype)
        self.projection_key = Linear(width, width, bias, dtype)
        self.projection_value = Linear(width, width, bias, dtype)
        self.heads, self.scale = extra["num_heads"][i], width**-0.5
        self.cls = extra["cls_token"][i]

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, grid, kernel):
        cls, tokens = None, x
        if self.cls:
            cls, tokens = split_first(op, x)
        maps = to_maps(op, tokens, grid)
        projected = []
        for name in ("query", "key", "value"):
            part = getattr(self, f"convolution_projection_{name}")(op, maps)
            if cls is not None:
                part = op.Concat(cls, part, axis=1)
            projected.append(getattr(self, f"projection_{name}")(op, part))
        return kernel(op, *projected, self.heads, self.scale)


class Dense(nn.Module):
    def __init__(self, in_size, out_size, dtype):
        super().__init__()
        self.dense = Linear(in_size, out_size, True, dtype)

    def forward(self, op, x):
        return self.dense(op, x)


class Attention(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        self.attention = SelfAttention(extra, dtype, i)
        width = extra["embed_dim"][i]
        self.output = Dense(width, width, dtype)

    def forward(self, op, x, grid, kernel):
        return self.output(op, self.attention(op, x, grid, kernel))


class Layer(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        width = extra["embed_dim"][i]
        inner = int(width * extra["mlp_ratio"][i])
        self.attention = Attention(extra, dtype, i)
        self.intermediate = Dense(width, inner, dtype)
        self.output = Dense(inner, width, dtype)
        self.layernorm_before = LayerNorm(width, NORM_EPS, dtype)
        self.layernorm_after = LayerNorm(width, NORM_EPS, dtype)

    def forward(self, op, x, grid, kernel):
        x = op.Add(self.attention(op, self.layernorm_before(op, x), grid, kernel), x)
        y = activation(op, "gelu", self.intermediate(op, self.layernorm_after(op, x)))
        return op.Add(self.output(op, y), x)


class Stage(nn.Module):
    """The embedding, the cls token (if any) ahead of the tokens, the layers; returns the map
    and the cls token's last state."""

    def __init__(self, cfg, dtype, i):
        super().__init__()
        extra = cfg.extra
        in_channels = cfg.num_channels if i == 0 else extra["embed_dim"][i - 1]
        self.width = extra["embed_dim"][i]
        self.cls_token = nn.Parameter([1, 1, self.width], dtype) if extra["cls_token"][i] else None
        self.embedding = Embeddings(extra, dtype, i, in_channels)
        self.layers = nn.ModuleList([Layer(extra, dtype, i) for _ in range(extra["depth"][i])])

    def expected_fusions(self, plan) -> dict[str, int]:
        # every layer's attention sum feeds its layernorm_after, its MLP sum the next layer's
        # layernorm_before; the first layer's reads the embedding
        return {"skip_norms": 2 * len(self.layers) - 1 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, kernel):
        tokens, grid = self.embedding(op, x)
        if self.cls_token is not None:
            shape = op.Concat(batch_of(op, x), [1, self.width], axis=0)
            tokens = op.Concat(op.Expand(self.cls_token, shape), tokens, axis=1)
        for layer in self.layers:
            tokens = layer(op, tokens, grid, kernel)
        cls = None
        if self.cls_token is not None:
            cls, tokens = split_first(op, tokens)
        return to_maps(op, tokens, grid), cls


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        stages = range(len(cfg.extra["depth"]))
        self.stages = nn.ModuleList([Stage(cfg, dtype, i) for i in stages])

    def forward(self, op, x, kernel):
        for stage in self.stages:
            x, cls = stage(op, x, kernel)
        return x, cls


class CvtBody(ConvNetBody):
    """CvtModel: the last map, and (as `pooled`) the cls token's state [batch, 1, width]."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        maps, cls = self.encoder(op, pixel_values, kernel)
        size = self.cfg.hidden_size
        dims = [BATCH, size, *FEATURE_DIMS]
        return Features(maps, dims, cls, None if cls is None else [BATCH, 1, size])


class CvtModel(VisionEncoderModel):
    """The classifier reads the `layernorm`-ed cls token of the last stage."""

    body_cls = CvtBody
    body_name = "cvt"

    def make_classifier(self, cfg, dtype, tensors):
        if not cfg.extra["cls_token"][-1]:
            raise ConfigError(
                "'cls_token' is false for the last stage: transformers' CvT classifier reads it"
            )
        self.layernorm = LayerNorm(cfg.hidden_size, NORM_EPS, dtype)
        self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features):
        return self.classifier(op, self.layernorm(op, first_token(op, features.pooled)))

    def forward(self, op, inputs) -> dict:
        if self.task != "image-feature-extraction":
            return super().forward(op, inputs)
        features = self.body(op, inputs.pixel_values)
        out = {"last_hidden_state": (features.hidden, features.hidden_dims)}
        if features.pooled is not None:
            out["cls_token_value"] = (features.pooled, features.pooled_dims)
        return out


FAMILIES = [
    Family(
        "cvt",
        CvtModel,
        "conv embeddings per stage, attention over depthwise-conv projections, cls token last",
        ("microsoft/cvt-13",),
        rules=CvtRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"layernorm\..*"),
        prefix="cvt.",
    ),
]

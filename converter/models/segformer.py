"""SegFormer's encoder (Mix Transformer): PVT's layers over overlapping patch convs, a
depthwise 3x3 conv inside each MLP in place of position tables (any image size), a LayerNorm
closing each stage. Every LayerNorm keeps torch's epsilon (transformers does not pass
`layer_norm_eps` to them)."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm, activation
from converter.components.encoder_attention import encoder_attention
from converter.execution_providers import SKIP_NORM
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody, to_maps
from converter.models.convnext import FEATURE_DIMS
from converter.models.pvt import FFN, Attention, Layer, PvtRules, SelfAttention
from converter.models.pvt_v2 import DepthwiseConv, PatchEmbeddings
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH

TOKENS = "tokens"


class SegformerRules(PvtRules):
    reduction_key = "sr_ratios"

    def read_extra(self, r):
        extra = super().read_extra(r)
        extra.update(eps=1e-5, reshape_last_stage=r.bool("reshape_last_stage", True))
        return extra


class EfficientSelfAttention(SelfAttention):
    reduction_name = "sr"


class EfficientAttention(Attention):
    self_attention_cls = EfficientSelfAttention


class MixFFN(FFN):
    """dense1, a depthwise 3x3 conv over the map, the activation, dense2."""

    def __init__(self, extra, dtype, i):
        super().__init__(extra, dtype, i)
        self.dwconv = DepthwiseConv(self.inner, dtype)

    def forward(self, op, x, grid):
        x = activation(op, self.act, self.dwconv(op, self.dense1(op, x), grid))
        return self.dense2(op, x)


class MixLayer(Layer):
    attention_cls, mlp_cls = EfficientAttention, MixFFN


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra = cfg.extra
        stages = range(len(extra["depths"]))
        self.patch_embeddings = nn.ModuleList(PatchEmbeddings(cfg, dtype, i) for i in stages)
        self.block = nn.ModuleList(
            nn.ModuleList(MixLayer(extra, dtype, i) for _ in range(extra["depths"][i]))
            for i in stages
        )
        self.layer_norm = nn.ModuleList(
            LayerNorm(extra["hidden_sizes"][i], extra["eps"], dtype) for i in stages
        )
        self.depths, self.reshape_last = extra["depths"], extra["reshape_last_stage"]

    def expected_fusions(self, plan) -> dict[str, int]:
        # a stage's first norm reads its patch embedding; every sum feeds a norm
        return {"skip_norms": 2 * sum(self.depths) if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, kernel):
        last = len(self.depths) - 1
        stages = zip(self.patch_embeddings, self.block, self.layer_norm, strict=True)
        for i, (embeddings, layers, norm) in enumerate(stages):
            x, grid = embeddings(op, x)
            for layer in layers:
                x = layer(op, x, grid, kernel)
            x = norm(op, x)
            if i < last or self.reshape_last:
                x = to_maps(op, x, grid)
        return x


class SegformerBody(ConvNetBody):
    """SegformerModel: the last stage's map (its tokens where `reshape_last_stage` is false)."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        hidden = self.encoder(op, pixel_values, kernel)
        size = self.cfg.hidden_size
        maps = self.cfg.extra["reshape_last_stage"]
        return Features(hidden, [BATCH, size, *FEATURE_DIMS] if maps else [BATCH, TOKENS, size])


class SegformerModel(VisionEncoderModel):
    body_cls = SegformerBody
    body_name = "segformer"

    def classify(self, op, features):
        axes = [2, 3] if self.cfg.extra["reshape_last_stage"] else [1]
        return self.classifier(op, op.ReduceMean(features.hidden, axes, keepdims=0))


FAMILIES = [
    Family(
        "segformer",
        SegformerModel,
        "Mix Transformer encoder: overlapping patch convs, reduced keys, depthwise-conv MLPs",
        ("nvidia/mit-b0",),
        rules=SegformerRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"decode_head\..*"),
        prefix="segformer.",
    ),
]

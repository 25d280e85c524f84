"""PVT (Pyramid Vision Transformer): stages of a patch conv with LayerNorm and learned positions
(built for the configured image size; the last stage leads with a cls token), then pre-norm
layers whose keys and values come from the map shrunk by a strided conv ("spatial-reduction
attention"); a final LayerNorm. The classifier reads the cls token."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.encoder_attention import encoder_attention
from converter.config.convnet import ConvNetRules, stage_list
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody, to_maps, to_tokens
from converter.models.vision import Dense, Features, VisionEncoderModel, batch_of, first_token
from converter.registry import Family
from converter.tasks.encoding import BATCH


class PvtRules(ConvNetRules):
    reduction_key = "sequence_reduction_ratios"

    def read_extra(self, r):
        blocks = r.int("num_encoder_blocks", default=4, hi=16)
        keys = ("depths", "hidden_sizes", "patch_sizes", "strides", "num_attention_heads")
        extra = {key: stage_list(r, key, int, blocks) for key in keys}
        extra["reductions"] = stage_list(r, self.reduction_key, int, blocks)
        extra["mlp_ratios"] = stage_list(r, "mlp_ratios", float, blocks)
        extra.update(
            hidden_act=r.str("hidden_act", default="gelu"),
            eps=r.float("layer_norm_eps", default=1e-6),
            qkv_bias=r.bool("qkv_bias", True),
        )
        for width, heads in zip(extra["hidden_sizes"], extra["num_attention_heads"], strict=True):
            if width % heads:
                raise ConfigError(f"a stage of width {width} cannot split into {heads} heads")
        return extra

    def hidden_size(self, r, extra):
        return extra["hidden_sizes"][-1]


class PatchEmbeddings(nn.Module):
    """The patch conv (its kernel is the config's `strides`, its stride `patch_sizes`), then
    LayerNorm, the cls token on the last stage, and the learned positions."""

    def __init__(self, cfg, dtype, i, side: tuple[int, int]):
        super().__init__()
        extra, last = cfg.extra, i == len(cfg.extra["depths"]) - 1
        width = extra["hidden_sizes"][i]
        in_channels = cfg.num_channels if i == 0 else extra["hidden_sizes"][i - 1]
        kernel, stride = extra["strides"][i], extra["patch_sizes"][i]
        self.projection = Conv2d(in_channels, width, kernel, dtype, stride)
        self.layer_norm = LayerNorm(width, extra["eps"], dtype)
        self.cls_token = nn.Parameter([1, 1, width], dtype) if last else None
        tokens = side[0] * side[1] + int(last)
        self.position_embeddings = nn.Parameter([1, tokens, width], dtype)
        self.width = width

    def forward(self, op, x):
        tokens = self.layer_norm(op, to_tokens(op, self.projection(op, x)))
        if self.cls_token is not None:
            shape = op.Concat(batch_of(op, x), [1, self.width], axis=0)
            tokens = op.Concat(op.Expand(self.cls_token, shape), tokens, axis=1)
        # transformers interpolates the table to the map's size: the same size, so unchanged
        return op.Add(tokens, self.position_embeddings)


class SelfAttention(nn.Module):
    """Queries from every token; keys and values from the map shrunk `reduction` times by a
    strided conv (`reduction_name`, with its `layer_norm`) where the ratio is above 1."""

    reduction_name = "sequence_reduction"

    def __init__(self, extra, dtype, i):
        super().__init__()
        width, bias = extra["hidden_sizes"][i], extra["qkv_bias"]
        self.query = Linear(width, width, bias, dtype)
        self.key = Linear(width, width, bias, dtype)
        self.value = Linear(width, width, bias, dtype)
        reduction = extra["reductions"][i]
        if reduction > 1:
            conv = Conv2d(width, width, reduction, dtype, reduction)
            setattr(self, self.reduction_name, conv)
            self.layer_norm = LayerNorm(width, extra["eps"], dtype)
        self.reduces = reduction > 1
        self.heads = extra["num_attention_heads"][i]
        self.scale = (width // self.heads) ** -0.5

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def reduce(self, op, x, grid):
        conv = getattr(self, self.reduction_name)
        return self.layer_norm(op, to_tokens(op, conv(op, to_maps(op, x, grid))))

    def forward(self, op, x, grid, kernel):
        q = self.query(op, x)
        source = self.reduce(op, x, grid) if self.reduces else x
        return kernel(op, q, self.key(op, source), self.value(op, source), self.heads, self.scale)


class Attention(nn.Module):
    self_attention_cls = SelfAttention

    def __init__(self, extra, dtype, i):
        super().__init__()
        attention = self.self_attention_cls(extra, dtype, i)
        setattr(self, "self", attention)  # noqa: B010 (the checkpoint's name)
        width = extra["hidden_sizes"][i]
        self.output = Dense(width, width, dtype)

    def forward(self, op, x, grid, kernel):
        return self.output(op, self.self(op, x, grid, kernel))


class FFN(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        width = extra["hidden_sizes"][i]
        self.inner = int(width * extra["mlp_ratios"][i])
        self.dense1 = Linear(width, self.inner, True, dtype)
        self.dense2 = Linear(self.inner, width, True, dtype)
        self.act = extra["hidden_act"]

    def forward(self, op, x, grid):
        return self.dense2(op, activation(op, self.act, self.dense1(op, x)))


class Layer(nn.Module):
    """Pre-norm: x + attention(layer_norm_1(x)), then x + mlp(layer_norm_2(x)); `grid` is the
    map's (height, width)."""

    attention_cls, mlp_cls = Attention, FFN

    def __init__(self, extra, dtype, i):
        super().__init__()
        width, eps = extra["hidden_sizes"][i], extra["eps"]
        self.layer_norm_1 = LayerNorm(width, eps, dtype)
        self.attention = self.attention_cls(extra, dtype, i)
        self.layer_norm_2 = LayerNorm(width, eps, dtype)
        self.mlp = self.mlp_cls(extra, dtype, i)

    def forward(self, op, x, grid, kernel):
        x = op.Add(self.attention(op, self.layer_norm_1(op, x), grid, kernel), x)
        return op.Add(x, self.mlp(op, self.layer_norm_2(op, x), grid))


def stage_sides(cfg) -> list[tuple[int, int]]:
    """Each stage's grid, as transformers sizes its position table: the image size halved
    once per stage past the first, divided by the stage's patch size."""
    extra, sides = cfg.extra, []
    for i, patch in enumerate(extra["patch_sizes"]):
        image = cfg.image_size if i == 0 else tuple(s // 2 ** (i + 1) for s in cfg.image_size)
        sides.append((image[0] // patch, image[1] // patch))
    return sides


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra, sides = cfg.extra, stage_sides(cfg)
        embeddings = [PatchEmbeddings(cfg, dtype, i, side) for i, side in enumerate(sides)]
        self.patch_embeddings = nn.ModuleList(embeddings)
        self.block = nn.ModuleList(
            nn.ModuleList([Layer(extra, dtype, i) for _ in range(extra["depths"][i])])
            for i in range(len(sides))
        )
        self.layer_norm = LayerNorm(cfg.hidden_size, extra["eps"], dtype)
        self.sides, self.depths = sides, extra["depths"]

    def expected_fusions(self, plan) -> dict[str, int]:
        # within a stage, every sum but the last feeds a layer norm; the last stage's last
        # sum feeds the final one
        return {"skip_norms": sum(2 * d - 1 for d in self.depths) + 1 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, kernel):
        last = len(self.sides) - 1
        for i, (embeddings, layers) in enumerate(
            zip(self.patch_embeddings, self.block, strict=True)
        ):
            x = embeddings(op, x)
            for layer in layers:
                x = layer(op, x, self.sides[i], kernel)
            if i < last:
                x = to_maps(op, x, self.sides[i])
        return self.layer_norm(op, x)


class PvtBody(ConvNetBody):
    """PvtModel: the last stage's tokens, cls token first, after the final LayerNorm."""

    static = True

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        if cfg.image_size is None:
            raise ConfigError("'image_size' is missing: PVT's position tables are built for it")
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        hidden = self.encoder(op, pixel_values, kernel)
        rows, columns = self.encoder.sides[-1]
        return Features(hidden, [BATCH, rows * columns + 1, self.cfg.hidden_size])


class PvtModel(VisionEncoderModel):
    body_cls = PvtBody
    body_name = "pvt"

    def classify(self, op, features):
        return self.classifier(op, first_token(op, features.hidden))


FAMILIES = [
    Family(
        "pvt",
        PvtModel,
        "pyramid of patch stages with learned positions, attention over conv-reduced keys",
        ("Xrenya/pvt-tiny-224",),
        rules=PvtRules(),
        task="image-feature-extraction",
        category="vision",
        unused=CONVNET_UNUSED,
        prefix="pvt.",
    ),
]

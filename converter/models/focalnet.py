"""FocalNet: Swin's stages with focal modulation in place of window attention: each token's
query times a modulator gathered by a stack of depthwise convs of growing reach (and a global
mean), gated per level. Any image size (maps padded to whole patches, as transformers does)."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.pooling import pad_to_multiple
from converter.config.convnet import ConvNetRules, stage_list
from converter.execution_providers import SKIP_NORM
from converter.models.convnet import (
    CONVNET_UNUSED,
    ConvNetBody,
    map_size,
    to_maps,
    to_tokens,
)
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH

TOKENS = "tokens"


class FocalNetRules(ConvNetRules):
    def read_extra(self, r):
        stages = len(stage_list(r, "depths", int))
        extra = {
            "depths": stage_list(r, "depths", int),
            "focal_levels": stage_list(r, "focal_levels", int, stages),
            "focal_windows": stage_list(r, "focal_windows", int, stages),
            "embed_dim": r.int("embed_dim", default=96),
            "patch_size": r.int("patch_size", default=4),
            "use_conv_embed": r.bool("use_conv_embed", False),
            "hidden_act": r.str("hidden_act", default="gelu"),
            "mlp_ratio": r.float("mlp_ratio", default=4.0),
            "use_layerscale": r.bool("use_layerscale", False),
            "use_post_layernorm": r.bool("use_post_layernorm", False),
            "use_post_layernorm_in_modulation": r.bool("use_post_layernorm_in_modulation", False),
            "normalize_modulator": r.bool("normalize_modulator", False),
            "eps": r.float("layer_norm_eps", default=1e-5),
        }
        return extra

    def hidden_size(self, r, extra):
        return extra["embed_dim"] * 2 ** (len(extra["depths"]) - 1)


class PatchEmbeddings(nn.Module):
    """Zeros up to whole patches, the patch conv (or, with `use_conv_embed`, an overlapping
    one), the optional `norm`; returns tokens and the map's (height, width)."""

    def __init__(self, extra, dtype, in_ch, out_ch, patch, stem, norm):
        super().__init__()
        if extra["use_conv_embed"]:
            kernel, stride, padding = (7, 4, 2) if stem else (3, 2, 1)
        else:
            kernel, stride, padding = patch, patch, 0
        self.projection = Conv2d(in_ch, out_ch, kernel, dtype, stride, padding)
        self.norm = LayerNorm(out_ch, extra["eps"], dtype) if norm else None
        self.patch = patch

    def forward(self, op, x):
        maps = self.projection(op, pad_to_multiple(op, x, (self.patch, self.patch)))
        tokens = to_tokens(op, maps)
        return (tokens if self.norm is None else self.norm(op, tokens)), map_size(op, maps)


class Embeddings(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra, dim = cfg.extra, cfg.extra["embed_dim"]
        self.patch_embeddings = PatchEmbeddings(
            extra, dtype, cfg.num_channels, dim, extra["patch_size"], True, False
        )
        self.norm = LayerNorm(dim, extra["eps"], dtype)

    def forward(self, op, x):
        tokens, grid = self.patch_embeddings(op, x)
        return self.norm(op, tokens), grid


class FocalLevel(nn.Module):
    """nn.Sequential(depthwise conv, GELU): the conv is `0`."""

    def __init__(self, dim, kernel, dtype):
        super().__init__()
        setattr(self, "0", Conv2d(dim, dim, kernel, dtype, 1, kernel // 2, dim, bias=False))

    def forward(self, op, x):
        return activation(op, "gelu", getattr(self, "0")(op, x))


class Modulation(nn.Module):
    def __init__(self, extra, dtype, i, dim):
        super().__init__()
        levels, window = extra["focal_levels"][i], extra["focal_windows"][i]
        self.projection_in = Linear(dim, 2 * dim + levels + 1, True, dtype)
        self.projection_context = Conv2d(dim, dim, 1, dtype)
        self.projection_out = Linear(dim, dim, True, dtype)
        self.focal_layers = nn.ModuleList(
            FocalLevel(dim, 2 * k + window, dtype) for k in range(levels)
        )
        post_norm = extra["use_post_layernorm_in_modulation"]
        self.layernorm = LayerNorm(dim, extra["eps"], dtype) if post_norm else None
        self.levels, self.dim, self.normalize = levels, dim, extra["normalize_modulator"]

    def forward(self, op, tokens, grid):
        """tokens [batch, height * width, dim] -> the same."""
        x = to_maps(op, self.projection_in(op, tokens), grid)
        sizes = op.Constant(value_ints=[self.dim, self.dim, self.levels + 1])
        q, ctx, gates = op.Split(x, sizes, axis=1, _outputs=3)
        total = None
        for level, focal in enumerate(self.focal_layers):
            ctx = focal(op, ctx)
            gated = op.Mul(ctx, op.Slice(gates, [level], [level + 1], [1]))
            total = gated if total is None else op.Add(total, gated)
        overall = activation(op, "gelu", op.ReduceMean(ctx, [2, 3], keepdims=1))
        last = op.Slice(gates, [self.levels], [self.levels + 1], [1])
        total = op.Add(total, op.Mul(overall, last))
        if self.normalize:
            total = op.Div(total, op.CastLike(float(self.levels + 1), total))
        out = to_tokens(op, op.Mul(q, self.projection_context(op, total)))
        if self.layernorm is not None:
            out = self.layernorm(op, out)
        return self.projection_out(op, out)


class MLP(nn.Module):
    def __init__(self, extra, dtype, dim):
        super().__init__()
        inner = int(dim * extra["mlp_ratio"])
        self.fc1 = Linear(dim, inner, True, dtype)
        self.fc2 = Linear(inner, dim, True, dtype)
        self.act = extra["hidden_act"]

    def forward(self, op, x):
        return self.fc2(op, activation(op, self.act, self.fc1(op, x)))


class Layer(nn.Module):
    def __init__(self, extra, dtype, i, dim):
        super().__init__()
        self.norm1 = LayerNorm(dim, extra["eps"], dtype)
        self.modulation = Modulation(extra, dtype, i, dim)
        self.norm2 = LayerNorm(dim, extra["eps"], dtype)
        self.mlp = MLP(extra, dtype, dim)
        if extra["use_layerscale"]:
            self.gamma_1 = nn.Parameter([dim], dtype)
            self.gamma_2 = nn.Parameter([dim], dtype)
        self.scaled, self.post = extra["use_layerscale"], extra["use_post_layernorm"]

    def forward(self, op, x, grid):
        if self.post:
            y = self.norm1(op, self.modulation(op, x, grid))
        else:
            y = self.modulation(op, self.norm1(op, x), grid)
        x = op.Add(x, op.Mul(self.gamma_1, y) if self.scaled else y)
        y = self.norm2(op, self.mlp(op, x)) if self.post else self.mlp(op, self.norm2(op, x))
        return op.Add(x, op.Mul(self.gamma_2, y) if self.scaled else y)


class Stage(nn.Module):
    def __init__(self, extra, dtype, i):
        super().__init__()
        dim, last = extra["embed_dim"] * 2**i, i == len(extra["depths"]) - 1
        layers = [Layer(extra, dtype, i, dim) for _ in range(extra["depths"][i])]
        self.layers = nn.ModuleList(layers)
        self.downsample = (
            None if last else PatchEmbeddings(extra, dtype, dim, 2 * dim, 2, False, True)
        )
        self.post = extra["use_post_layernorm"]

    def expected_fusions(self, plan) -> dict[str, int]:
        # pre-norm: every sum but the stage's last feeds a norm (the last stage's last feeds
        # the model's layernorm, counted there)
        count = 0 if self.post else 2 * len(self.layers) - 1
        return {"skip_norms": count if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, grid):
        for layer in self.layers:
            x = layer(op, x, grid)
        if self.downsample is None:
            return x, grid
        return self.downsample(op, to_maps(op, x, grid))


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        stages = range(len(cfg.extra["depths"]))
        self.stages = nn.ModuleList(Stage(cfg.extra, dtype, i) for i in stages)

    def forward(self, op, x, grid):
        for stage in self.stages:
            x, grid = stage(op, x, grid)
        return x


class FocalNetBody(ConvNetBody):
    """FocalNetModel: the last tokens after `layernorm`, and their mean."""

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.embeddings = Embeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)
        self.layernorm = LayerNorm(cfg.hidden_size, cfg.extra["eps"], dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}  # the last sum, by layernorm

    def forward(self, op, pixel_values) -> Features:
        hidden = self.layernorm(op, self.encoder(op, *self.embeddings(op, pixel_values)))
        size = self.cfg.hidden_size
        pooled = op.ReduceMean(hidden, [1], keepdims=0)
        return Features(hidden, [BATCH, TOKENS, size], pooled, [BATCH, size])


class FocalNetModel(VisionEncoderModel):
    body_cls = FocalNetBody
    body_name = "focalnet"


FAMILIES = [
    Family(
        "focalnet",
        FocalNetModel,
        "Swin-like stages with focal modulation (gated depthwise-conv contexts) for attention",
        ("microsoft/focalnet-tiny",),
        rules=FocalNetRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"(focalnet\.)?embeddings\.mask_token", r"decoder\..*"),
        prefix="focalnet.",
    ),
]

"""ConvNeXt and ConvNeXt V2: a patch Conv stem with a channels-first LayerNorm, stages of
blocks (7x7 depthwise Conv, LayerNorm over channels, pointwise MLP, a per-channel layer scale in
V1, Global Response Normalization in V2) added to their input, each later stage entered through
a channels-first LayerNorm and a 2x2 stride-2 Conv; the pooler is the LayerNorm of the spatial
mean. Convolutions take any image size. No attention: every LayerNorm here reads a transposed
map, so none fuses with a residual add."""

from __future__ import annotations

from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import ChannelsFirstLayerNorm, Conv2d
from converter.config.vision import MAX_IMAGE_SIDE, VisionRules, int_list, pair, same_length
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH
from converter.tasks.image_encoding import HEIGHT, WIDTH

BLOCK_EPS = 1e-6  # the stem's, blocks' and downsampling norms' (not the config's layer_norm_eps)
GRN_EPS = 1e-6
# the last feature map's sides (the image's divided by the stem's patch and halved per stage)
FEATURE_DIMS = ("feature_height", "feature_width")


class ConvNextRules(VisionRules):
    """`hidden_sizes` and `depths` per stage (`num_stages` of them), `patch_size` of the stem,
    `layer_scale_init_value` (V1: 0 means no layer scale)."""

    def stages(self, r):
        widths, depths = int_list(r, "hidden_sizes"), int_list(r, "depths")
        same_length(hidden_sizes=widths, depths=depths)
        if r.int("num_stages", default=len(depths)) != len(depths):
            r.refuse("num_stages", f"it must equal the {len(depths)} stages 'depths' lists")
        return widths, depths, (), tuple(4 * w for w in widths)

    def image_size(self, r):
        return None

    def patch_size(self, r):
        return pair(r, "patch_size", MAX_IMAGE_SIDE)

    def read_extra(self, r):
        scale = r.float("layer_scale_init_value", default=0.0, positive=False)
        return {"layer_scale": scale > 0}


class GRN(nn.Module):
    """Global Response Normalization over [batch, rows, columns, channels]: each channel's L2
    norm over the map, divided by the mean over channels; x + bias + weight * x * that."""

    def __init__(self, size: int, dtype):
        super().__init__()
        self.weight = nn.Parameter([1, 1, 1, size], dtype)
        self.bias = nn.Parameter([1, 1, 1, size], dtype)

    def forward(self, op, x):
        norms = op.ReduceL2(x, [1, 2], keepdims=1)
        relative = op.Div(norms, op.Add(op.ReduceMean(norms, [-1], keepdims=1), GRN_EPS))
        return op.Add(op.Add(op.Mul(self.weight, op.Mul(x, relative)), self.bias), x)


class ConvNextLayer(nn.Module):
    def __init__(self, cfg, dtype, width: int):
        super().__init__()
        self.dwconv = Conv2d(width, width, 7, dtype, padding=3, groups=width)
        self.layernorm = LayerNorm(width, BLOCK_EPS, dtype)
        self.pwconv1 = Linear(width, 4 * width, True, dtype)
        self.grn = GRN(4 * width, dtype) if cfg.extra.get("grn") else None
        self.pwconv2 = Linear(4 * width, width, True, dtype)
        scaled = cfg.extra["layer_scale"]
        self.layer_scale_parameter = nn.Parameter([width], dtype) if scaled else None
        self.act = cfg.activation

    def forward(self, op, x):
        h = op.Transpose(self.dwconv(op, x), perm=[0, 2, 3, 1])
        h = activation(op, self.act, self.pwconv1(op, self.layernorm(op, h)))
        if self.grn is not None:
            h = self.grn(op, h)
        h = self.pwconv2(op, h)
        if self.layer_scale_parameter is not None:
            h = op.Mul(self.layer_scale_parameter, h)
        return op.Add(x, op.Transpose(h, perm=[0, 3, 1, 2]))


class ConvNextStage(nn.Module):
    def __init__(self, cfg, dtype, stage: int):
        super().__init__()
        width = cfg.widths[stage]
        if stage:
            before = cfg.widths[stage - 1]
            self.downsampling_layer = nn.ModuleList(
                [
                    ChannelsFirstLayerNorm(before, BLOCK_EPS, dtype),
                    Conv2d(before, width, 2, dtype, stride=2),
                ]
            )
        else:
            self.downsampling_layer = None
        layers = [ConvNextLayer(cfg, dtype, width) for _ in range(cfg.depths[stage])]
        self.layers = nn.ModuleList(layers)

    def forward(self, op, x):
        for step in self.downsampling_layer or ():
            x = step(op, x)
        for layer in self.layers:
            x = layer(op, x)
        return x


class ConvNextEmbeddings(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        patch, width = cfg.patch_size, cfg.widths[0]
        self.patch_embeddings = Conv2d(cfg.num_channels, width, patch, dtype, stride=patch)
        self.layernorm = ChannelsFirstLayerNorm(width, BLOCK_EPS, dtype)

    def forward(self, op, pixel_values):
        return self.layernorm(op, self.patch_embeddings(op, pixel_values))


class ConvNextEncoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        self.stages = nn.ModuleList([ConvNextStage(cfg, dtype, i) for i in range(len(cfg.depths))])

    def forward(self, op, x):
        for stage in self.stages:
            x = stage(op, x)
        return x


class ConvNextBody(nn.Module):
    """ConvNextModel: last_hidden_state is the last map [batch, channels, rows, columns];
    pooler_output the `layernorm` of its mean."""

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__()
        self.embeddings = ConvNextEmbeddings(cfg, dtype)
        self.encoder = ConvNextEncoder(cfg, dtype)
        self.layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.cfg = cfg

    def image_dims(self):
        return HEIGHT, WIDTH

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encoder(op, self.embeddings(op, pixel_values))
        pooled = self.layernorm(op, op.ReduceMean(hidden, [2, 3], keepdims=0))
        size = self.cfg.hidden_size
        return Features(hidden, [BATCH, size, *FEATURE_DIMS], pooled, [BATCH, size])


class ConvNextImageModel(VisionEncoderModel):
    body_cls = ConvNextBody
    body_name = "convnext"


class ConvNextV2Rules(ConvNextRules):
    """ConvNeXt's keys; V2 blocks have Global Response Normalization and no layer scale."""

    def read_extra(self, r):
        return {"layer_scale": False, "grn": True}


class ConvNextV2ImageModel(ConvNextImageModel):
    body_name = "convnextv2"


def convnext_family(model_type, model_class, notes, examples, rules) -> Family:
    return Family(
        model_type,
        model_class,
        notes,
        examples,
        rules=rules,
        task="image-feature-extraction",
        category="vision",
        prefix=f"{model_class.body_name}.",
    )


FAMILIES = [
    convnext_family(
        "convnext",
        ConvNextImageModel,
        "depthwise-Conv blocks with channel LayerNorms and layer scales, any image size",
        ("facebook/convnext-tiny-224",),
        ConvNextRules(),
    ),
    convnext_family(
        "convnextv2",
        ConvNextV2ImageModel,
        "ConvNeXt blocks with Global Response Normalization instead of layer scales",
        ("facebook/convnextv2-tiny-1k-224",),
        ConvNextV2Rules(),
    ),
]

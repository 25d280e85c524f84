"""LeViT: four strided conv + BatchNorm steps into tokens, then stages of residual attention
(keys narrower than values, a learned bias per head and relative offset) and MLPs, every
projection a Linear with BatchNorm; between stages an attention whose queries are every other
token. The bias tables fix the image size. The classifier (BatchNorm, Linear) reads the mean
token; `...WithTeacher` checkpoints average it with the distillation head."""

from __future__ import annotations

import itertools

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.conv_layers import ConvNorm, TokenBatchNorm
from converter.components.encoder_attention import encoder_attention
from converter.config.convnet import ConvNetRules, stage_list
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA
from converter.models.convnet import CONVNET_UNUSED, ConvNetBody
from converter.models.vision import Features, VisionEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH

BN_EPS = 1e-5  # every LeViT BatchNorm keeps torch's default


class LevitRules(ConvNetRules):
    def read_extra(self, r):
        extra = {
            key: stage_list(r, key, int, 3)
            for key in ("hidden_sizes", "num_attention_heads", "depths", "key_dim")
        }
        for key in ("attention_ratio", "mlp_ratio"):
            extra[key] = stage_list(r, key, int, 3)
        extra.update(
            kernel_size=r.int("kernel_size", default=3),
            stride=r.int("stride", default=2),
            padding=r.int("padding", default=1, lo=0),
            patch_size=r.int("patch_size", default=16),
        )
        if not r.has("image_size"):
            raise ConfigError("'image_size' is missing: LeViT's attention biases are built for it")
        return extra

    def hidden_size(self, r, extra):
        return extra["hidden_sizes"][-1]


class PatchConv(ConvNorm):
    """LevitConvEmbeddings: `convolution` and `batch_norm`."""

    norm_name = "batch_norm"


class PatchEmbeddings(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        extra, width = cfg.extra, cfg.extra["hidden_sizes"][0]
        widths = [cfg.num_channels, width // 8, width // 4, width // 2, width]
        for i in range(4):
            conv = PatchConv(
                widths[i],
                widths[i + 1],
                extra["kernel_size"],
                dtype,
                stride=extra["stride"],
                padding=extra["padding"],
                eps=BN_EPS,
            )
            setattr(self, f"embedding_layer_{i + 1}", conv)

    def forward(self, op, x):
        for i in range(1, 5):
            x = getattr(self, f"embedding_layer_{i}")(op, x)
            x = op.HardSwish(x) if i < 4 else x
        return op.Transpose(op.Reshape(x, [0, 0, -1]), perm=[0, 2, 1])


class LinearNorm(nn.Module):
    """MLPLayerWithBN: a bias-free `linear`, then `batch_norm` over its channels."""

    def __init__(self, in_size, out_size, dtype):
        super().__init__()
        self.linear = Linear(in_size, out_size, False, dtype)
        self.batch_norm = TokenBatchNorm(out_size, dtype, BN_EPS)

    def forward(self, op, x):
        return self.batch_norm(op, self.linear(op, x))


def bias_indices(queries: list, keys: list, stride: int) -> np.ndarray:
    """Each (query, key) pair's column of the bias table: the distinct (|dy|, |dx|) offsets
    numbered in the order they first appear (queries on the grid every `stride`th point)."""
    offsets: dict = {}
    rows = []
    for q in queries:
        for k in keys:
            offset = (abs(q[0] * stride - k[0]), abs(q[1] * stride - k[1]))
            rows.append(offsets.setdefault(offset, len(offsets)))
    return np.array(rows, np.int64).reshape(len(queries), len(keys))


def grid(side: int) -> list:
    return list(itertools.product(range(side), range(side)))


def split_heads(op, x, heads: int, widths: list[int]) -> list:
    """[batch, tokens, heads * sum(widths)] cut, head by head, into [batch, tokens, heads * w]
    for each w (LeViT packs every head's query, key and value together)."""
    per_head = op.Reshape(x, op.Constant(value_ints=[0, 0, heads, sum(widths)]))
    sizes = op.Constant(value_ints=widths)
    parts = op.Split(per_head, sizes, axis=3, _outputs=len(widths))
    return [op.Reshape(p, op.Constant(value_ints=[0, 0, -1])) for p in parts]


class Attention(nn.Module):
    """LevitAttention: packed queries, keys and values; biases by relative offset."""

    def __init__(self, size, key_dim, heads, ratio, resolution, dtype):
        super().__init__()
        self.widths = [key_dim, key_dim, ratio * key_dim]
        self.queries_keys_values = LinearNorm(size, heads * sum(self.widths), dtype)
        self.projection = LinearNorm(heads * ratio * key_dim, size, dtype)
        points = grid(resolution)
        self.indices = bias_indices(points, points, 1)
        self.attention_biases = nn.Parameter([heads, int(self.indices.max()) + 1], dtype)
        self.heads, self.scale = heads, key_dim**-0.5

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def bias(self, op):
        """[1, heads, queries, keys]"""
        indices = op.Constant(value=ir.tensor(self.indices))
        return op.Unsqueeze(op.Gather(self.attention_biases, indices, axis=1), [0])

    def attend(self, op, q, k, v, kernel):
        context = kernel(op, q, k, v, self.heads, self.scale, self.bias(op))
        return self.projection(op, op.HardSwish(context))

    def forward(self, op, x, kernel):
        q, k, v = split_heads(op, self.queries_keys_values(op, x), self.heads, self.widths)
        return self.attend(op, q, k, v, kernel)


class AttentionSubsample(Attention):
    """LevitAttentionSubsample: the queries are every `stride`th token of each row and column
    (from their own projection), the keys and values every token; the width changes."""

    def __init__(self, in_size, out_size, key_dim, heads, ratio, stride, resolution, dtype):
        nn.Module.__init__(self)
        self.widths = [key_dim, ratio * key_dim]
        self.keys_values = LinearNorm(in_size, heads * sum(self.widths), dtype)
        self.queries = LinearNorm(in_size, heads * key_dim, dtype)
        self.projection = LinearNorm(heads * ratio * key_dim, out_size, dtype)
        out = (resolution - 1) // stride + 1
        self.indices = bias_indices(grid(out), grid(resolution), stride)
        self.attention_biases = nn.Parameter([heads, int(self.indices.max()) + 1], dtype)
        self.heads, self.scale = heads, key_dim**-0.5
        self.stride, self.resolution, self.in_size = stride, resolution, in_size

    def forward(self, op, x, kernel):
        k, v = split_heads(op, self.keys_values(op, x), self.heads, self.widths)
        side = self.resolution
        tokens = op.Reshape(x, op.Constant(value_ints=[0, side, side, -1]))
        step = self.stride
        kept = op.Slice(tokens, [0, 0], [side, side], [1, 2], [step, step])
        kept = op.Reshape(kept, op.Constant(value_ints=[0, -1, self.in_size]))
        q = self.queries(op, kept)
        return self.attend(op, q, k, v, kernel)


class MLP(nn.Module):
    def __init__(self, size, inner, dtype):
        super().__init__()
        self.linear_up = LinearNorm(size, inner, dtype)
        self.linear_down = LinearNorm(inner, size, dtype)

    def forward(self, op, x, kernel=None):
        return self.linear_down(op, op.HardSwish(self.linear_up(op, x)))


class Residual(nn.Module):
    """LevitResidualLayer: x + module(x)."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, op, x, kernel):
        return op.Add(x, self.module(op, x, kernel))


class Stage(nn.Module):
    def __init__(self, extra, dtype, i, resolution):
        super().__init__()
        size, key_dim = extra["hidden_sizes"][i], extra["key_dim"][i]
        heads, ratio = extra["num_attention_heads"][i], extra["attention_ratio"][i]
        mlp = extra["mlp_ratio"][i]
        layers = []
        for _ in range(extra["depths"][i]):
            layers.append(Residual(Attention(size, key_dim, heads, ratio, resolution, dtype)))
            if mlp > 0:
                layers.append(Residual(MLP(size, size * mlp, dtype)))
        self.resolution = resolution
        if i < 2:  # transformers' down_ops: a subsampling attention after the first two stages
            out_size, sub_key = extra["hidden_sizes"][i + 1], extra["key_dim"][0]
            sub_heads = extra["hidden_sizes"][i] // sub_key
            layers.append(
                AttentionSubsample(size, out_size, sub_key, sub_heads, 4, 2, resolution, dtype)
            )
            self.resolution = (resolution - 1) // 2 + 1
            layers.append(Residual(MLP(out_size, out_size * 2, dtype)))
        self.layers = nn.ModuleList(layers)

    def forward(self, op, x, kernel):
        for layer in self.layers:
            x = layer(op, x, kernel)
        return x


class Encoder(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        resolution, stages = cfg.image_size[0] // cfg.extra["patch_size"], []
        for i in range(3):
            stages.append(Stage(cfg.extra, dtype, i, resolution))
            resolution = stages[-1].resolution
        self.stages = nn.ModuleList(stages)
        self.tokens = resolution * resolution

    def forward(self, op, x, kernel):
        for stage in self.stages:
            x = stage(op, x, kernel)
        return x


class LevitBody(ConvNetBody):
    """LevitModel: the last tokens and their mean."""

    static = True

    def __init__(self, cfg, dtype, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        if cfg.image_size[0] != cfg.image_size[1]:
            raise ConfigError(f"'image_size' = {list(cfg.image_size)}: LeViT's grid is square")
        self.patch_embeddings = PatchEmbeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)

    def forward(self, op, pixel_values) -> Features:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        hidden = self.encoder(op, self.patch_embeddings(op, pixel_values), kernel)
        size = self.cfg.hidden_size
        dims = [BATCH, self.encoder.tokens, size]
        return Features(hidden, dims, op.ReduceMean(hidden, [1], keepdims=0), [BATCH, size])


class Classifier(nn.Module):
    """LevitClassificationLayer: `batch_norm`, then `linear`."""

    def __init__(self, cfg, dtype):
        super().__init__()
        self.batch_norm = TokenBatchNorm(cfg.hidden_size, dtype, BN_EPS)
        self.linear = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def forward(self, op, x):
        return self.linear(op, self.batch_norm(op, x))


class LevitModel(VisionEncoderModel):
    body_cls = LevitBody
    body_name = "levit"

    def make_classifier(self, cfg, dtype, tensors):
        self.classifier = Classifier(cfg, dtype)
        teacher = "classifier_distill.linear.weight" in tensors
        self.classifier_distill = Classifier(cfg, dtype) if teacher else None

    def classify(self, op, features):
        logits = self.classifier(op, features.pooled)
        if self.classifier_distill is None:
            return logits
        both = op.Add(logits, self.classifier_distill(op, features.pooled))
        return op.Div(both, op.CastLike(2.0, both))


FAMILIES = [
    Family(
        "levit",
        LevitModel,
        "conv stem, attention with per-offset biases and BatchNorm projections, "
        "subsampling attention between stages; the distillation head averaged in",
        ("facebook/levit-128S",),
        rules=LevitRules(),
        task="image-feature-extraction",
        category="vision",
        unused=(*CONVNET_UNUSED, r"classifier_distill\..*"),
        prefix="levit.",
    ),
]

"""BEiT and Data2Vec-Vision: ViT layers whose attention adds a learned relative-position bias
(per layer, shared by all layers, or both), with no key bias, per-channel layer scales
(`lambda_1`, `lambda_2`), absolute positions optional, and a pooler that is the LayerNorm of the
mean patch token (`use_mean_pooling`, then without a final LayerNorm) or the cls token.

The bias table covers the configured grid, so the image size is fixed; the grid must be square
(transformers resamples a non-square grid's table on every call)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm
from converter.components.windows import relative_position_index
from converter.config.vision import MAX_IMAGE_SIDE, VisionRules, pair
from converter.models.vision import VisionEncoderModel, first_token
from converter.models.vision_transformer import (
    ViTAttention,
    ViTBody,
    ViTEmbeddings,
    ViTEncoder,
    ViTLayer,
    ViTSelfAttention,
)
from converter.models.vit import vit_unused
from converter.registry import Family


class BeitRules(VisionRules):
    """ViT's keys and BEiT's switches (absolute positions, the two relative-position biases,
    layer scales, mean pooling)."""

    def read_extra(self, r):
        image, patch = pair(r, "image_size", MAX_IMAGE_SIDE), pair(r, "patch_size", MAX_IMAGE_SIDE)
        if image[0] // patch[0] != image[1] // patch[1]:
            r.refuse("image_size", "transformers resamples the positions of a non-square grid")
        return {
            "absolute_positions": r.bool("use_absolute_position_embeddings", False),
            "layer_bias": r.bool("use_relative_position_bias", False),
            "shared_bias": r.bool("use_shared_relative_position_bias", False),
            "layer_scale": r.float("layer_scale_init_value", default=0.1, positive=False) > 0,
            "mean_pooling": r.bool("use_mean_pooling", True),
        }


def relative_position_index_with_cls(rows: int, columns: int) -> np.ndarray:
    """Swin's index over the grid's token pairs, then three more table rows: cls-to-token,
    token-to-cls and cls-to-cls."""
    distances = (2 * rows - 1) * (2 * columns - 1)
    tokens = rows * columns
    index = np.zeros((tokens + 1,) * 2, np.int64)
    index[1:, 1:] = relative_position_index(rows, columns).reshape(tokens, tokens)
    index[0, :] = distances
    index[:, 0] = distances + 1
    index[0, 0] = distances + 2
    return index.reshape(-1)


class RelativePositionBias(nn.Module):
    """The [1, heads, tokens, tokens] bias read from `relative_position_bias_table`."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        rows, columns = cfg.grid
        distances = (2 * rows - 1) * (2 * columns - 1) + 3
        self.relative_position_bias_table = nn.Parameter([distances, cfg.heads[0]], dtype)
        self.index = relative_position_index_with_cls(rows, columns)
        self.tokens = rows * columns + 1

    def forward(self, op):
        index = op.Constant(value=ir.tensor(self.index))
        bias = op.Gather(self.relative_position_bias_table, index, axis=0)
        bias = op.Reshape(bias, [self.tokens, self.tokens, -1])
        return op.Unsqueeze(op.Transpose(bias, perm=[2, 0, 1]), [0])


class BeitSelfAttention(ViTSelfAttention):
    def __init__(self, cfg, dtype, size, heads):
        super().__init__(cfg, dtype, size, heads)
        own = cfg.extra["layer_bias"]
        self.relative_position_bias = RelativePositionBias(cfg, dtype) if own else None

    def biases(self, cfg):
        return True, False, True

    def forward(self, op, x, kernel, bias=None):
        if self.relative_position_bias is not None:
            own = self.relative_position_bias(op)
            bias = own if bias is None else op.Add(own, bias)
        return super().forward(op, x, kernel, bias)


class BeitAttention(ViTAttention):
    self_attention_cls = BeitSelfAttention


class BeitLayer(ViTLayer):
    """ViT's layer with the attention and MLP outputs scaled by `lambda_1` and `lambda_2`."""

    attention_cls = BeitAttention

    def __init__(self, cfg, dtype):
        super().__init__(cfg, dtype)
        scaled = cfg.extra["layer_scale"]
        self.lambda_1 = nn.Parameter([cfg.hidden_size], dtype) if scaled else None
        self.lambda_2 = nn.Parameter([cfg.hidden_size], dtype) if scaled else None

    def forward(self, op, x, kernel, bias=None):
        attended = self.attention(op, self.layernorm_before(op, x), kernel, bias)
        x = op.Add(x, attended if self.lambda_1 is None else op.Mul(self.lambda_1, attended))
        out = self.mlp(op, self.layernorm_after(op, x))
        return op.Add(x, out if self.lambda_2 is None else op.Mul(self.lambda_2, out))


class BeitEncoder(ViTEncoder):
    """The layers, and the `relative_position_bias` they share (`use_shared_...`)."""

    layer_cls = BeitLayer

    def __init__(self, cfg, dtype):
        super().__init__(cfg, dtype)
        shared = cfg.extra["shared_bias"]
        self.relative_position_bias = RelativePositionBias(cfg, dtype) if shared else None

    def forward(self, op, x, kernel, bias=None):
        if self.relative_position_bias is not None:
            bias = self.relative_position_bias(op)
        return super().forward(op, x, kernel, bias)


class BeitEmbeddings(ViTEmbeddings):
    def has_positions(self, cfg):
        return cfg.extra["absolute_positions"]


class BeitPooler(nn.Module):
    """`layernorm` of the mean patch token."""

    def __init__(self, cfg, dtype):
        super().__init__()
        self.layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.size = cfg.hidden_size

    def forward(self, op, hidden):
        patches = op.Slice(hidden, [1], [2**62], [1])
        return self.layernorm(op, op.ReduceMean(patches, [1], keepdims=0))


class BeitBody(ViTBody):
    """BeitModel: with mean pooling there is no final LayerNorm and the pooler has one (built
    when the checkpoint has it); without, the pooler output is the normed cls token."""

    embeddings_cls = BeitEmbeddings
    encoder_cls = BeitEncoder
    pooler_cls = BeitPooler

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled and cfg.extra["mean_pooling"])

    def make_final_norm(self, cfg, dtype):
        return None if cfg.extra["mean_pooling"] else super().make_final_norm(cfg, dtype)

    def pool(self, op, hidden):
        if self.cfg.extra["mean_pooling"]:
            return super().pool(op, hidden)
        return first_token(op, hidden), self.cfg.hidden_size


class BeitImageModel(VisionEncoderModel):
    body_cls = BeitBody
    body_name = "beit"

    def uses_pooler(self, task, tensors):
        return task == "image-classification" or self.has(tensors, "pooler.layernorm.weight")


class Data2VecVisionImageModel(BeitImageModel):
    body_name = "data2vec_vision"


def beit_family(model_type: str, model_class: type, prefix: str, notes: str, examples) -> Family:
    return Family(
        model_type,
        model_class,
        notes,
        examples,
        rules=BeitRules(),
        task="image-feature-extraction",
        category="vision",
        # and the buffers older checkpoints carry
        unused=(*vit_unused(prefix), r".*relative_position_index"),
        prefix=f"{prefix}.",
    )


FAMILIES = [
    beit_family(
        "beit",
        BeitImageModel,
        "beit",
        "ViT layers with relative-position biases, layer scales, mean-pooled pooler",
        ("microsoft/beit-base-patch16-224",),
    ),
    beit_family(
        "data2vec-vision",
        Data2VecVisionImageModel,
        "data2vec_vision",
        "BEiT's layout (relative-position biases, layer scales, mean-pooled pooler)",
        ("facebook/data2vec-vision-base-ft1k",),
    ),
]

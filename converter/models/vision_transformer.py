"""The ViT layout most patch encoders share (ViT, DeiT, DINOv2, BEiT, ...): a patch Conv, a cls
token (and the family's other leading tokens) with learned positions, pre-norm layers of
bidirectional attention and an MLP, a final LayerNorm and an optional pooler.

Module paths are the Hub checkpoints' names (`vit.encoder.layer.3.attention.attention.query`);
a family with other names or steps subclasses the piece that differs.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.encoder_attention import encoder_attention
from converter.config.vision import VisionConfig
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.vision import Dense, Features, batch_of, first_token
from converter.tasks.encoding import BATCH


class PatchEmbeddings(nn.Module):
    """`projection`, a Conv whose kernel and stride are the patch: [batch, patches, hidden]."""

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        patch = cfg.patch_size
        self.projection = Conv2d(cfg.num_channels, cfg.hidden_size, patch, dtype, stride=patch)

    def forward(self, op, pixel_values):
        maps = self.projection(op, pixel_values)  # [batch, hidden, rows, columns]
        return op.Transpose(op.Reshape(maps, [0, 0, -1]), perm=[0, 2, 1])


class ViTEmbeddings(nn.Module):
    """The `leading` tokens (each a [1, 1, hidden] parameter), then the patches, plus the learned
    `position_embeddings` of the configured grid."""

    leading = ("cls_token",)

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        for name in self.leading:
            setattr(self, name, nn.Parameter([1, 1, size], dtype))
        self.patch_embeddings = PatchEmbeddings(cfg, dtype)
        rows, columns = cfg.grid
        tokens = rows * columns + len(self.leading)
        positioned = self.has_positions(cfg)
        self.position_embeddings = nn.Parameter([1, tokens, size], dtype) if positioned else None
        self.size = size

    def has_positions(self, cfg: VisionConfig) -> bool:
        return True

    def tokens(self, op, pixel_values):
        """The leading tokens and the patches, [batch, tokens, hidden]."""
        patches = self.patch_embeddings(op, pixel_values)
        shape = op.Concat(batch_of(op, pixel_values), [1, self.size], axis=0)
        leading = [op.Expand(getattr(self, name), shape) for name in self.leading]
        return op.Concat(*leading, patches, axis=1)

    def positions(self, op, pixel_values):
        return self.position_embeddings

    def forward(self, op, pixel_values):
        tokens = self.tokens(op, pixel_values)
        if self.position_embeddings is None:
            return tokens
        return op.Add(tokens, self.positions(op, pixel_values))


class ViTSelfAttention(nn.Module):
    """query, key and value projections into the EP's attention kernel."""

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType, size: int, heads: int):
        super().__init__()
        q, k, v = self.biases(cfg)
        self.query = Linear(size, size, q, dtype)
        self.key = Linear(size, size, k, dtype)
        self.value = Linear(size, size, v, dtype)
        self.heads, self.scale = heads, (size // heads) ** -0.5

    def biases(self, cfg: VisionConfig) -> tuple[bool, bool, bool]:
        """Whether query, key and value have biases."""
        return (cfg.qkv_bias,) * 3

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, kernel, bias=None):
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        return kernel(op, q, k, v, self.heads, self.scale, bias)


class ViTAttention(nn.Module):
    """`attention` (the self-attention) and `output.dense`."""

    self_attention_cls = ViTSelfAttention

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        size, heads = cfg.hidden_size, cfg.heads[0]
        self.attention = self.self_attention_cls(cfg, dtype, size, heads)
        self.output = Dense(size, size, dtype)

    def forward(self, op, x, kernel, bias=None):
        return self.output(op, self.attention(op, x, kernel, bias))


class ViTLayer(nn.Module):
    """Pre-norm: x + attention(layernorm_before(x)), then x + MLP(layernorm_after(x)), the MLP
    being `intermediate.dense`, the activation and `output.dense`."""

    attention_cls = ViTAttention

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        size, inner = cfg.hidden_size, cfg.intermediate_sizes[0]
        self.attention = self.attention_cls(cfg, dtype)
        self.layernorm_before = LayerNorm(size, cfg.norm_eps, dtype)
        self.layernorm_after = LayerNorm(size, cfg.norm_eps, dtype)
        self.intermediate = Dense(size, inner, dtype)
        self.output = Dense(inner, size, dtype)
        self.act = cfg.activation

    def mlp(self, op, x):
        return self.output(op, activation(op, self.act, self.intermediate(op, x)))

    def forward(self, op, x, kernel, bias=None):
        x = op.Add(x, self.attention(op, self.layernorm_before(op, x), kernel, bias))
        return op.Add(x, self.mlp(op, self.layernorm_after(op, x)))


class ViTEncoder(nn.Module):
    layer_cls = ViTLayer

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        self.layer = nn.ModuleList([self.layer_cls(cfg, dtype) for _ in range(cfg.depths[0])])

    def forward(self, op, x, kernel, bias=None):
        for layer in self.layer:
            x = layer(op, x, kernel, bias)
        return x


class ViTPooler(nn.Module):
    """`dense` over the first token, then `pooler_act` (tanh unless the config says)."""

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        self.size = cfg.extra.get("pooler_output_size", cfg.hidden_size)
        self.dense = Linear(cfg.hidden_size, self.size, True, dtype)
        self.act = cfg.extra.get("pooler_act", "tanh")

    def forward(self, op, hidden):
        pooled = self.dense(op, first_token(op, hidden))
        return op.Tanh(pooled) if self.act == "tanh" else activation(op, self.act, pooled)


class ViTBody(nn.Module):
    """ViTModel: embeddings, encoder, the final `layernorm` and (`pooled`) the pooler. The
    position table fixes the image size (interpolate_pos_encoding is not converted)."""

    embeddings_cls = ViTEmbeddings
    encoder_cls = ViTEncoder
    pooler_cls = ViTPooler

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = self.embeddings_cls(cfg, dtype)
        self.encoder = self.encoder_cls(cfg, dtype)
        self.layernorm = self.make_final_norm(cfg, dtype)
        self.pooler = self.pooler_cls(cfg, dtype) if pooled else None
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def make_final_norm(self, cfg: VisionConfig, dtype: ir.DataType) -> LayerNorm | None:
        return LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # each layer's attention sum feeds its layernorm_after, its MLP sum the next layer's
        # layernorm_before or the final layernorm
        fused = 2 * self.cfg.num_hidden_layers - (self.layernorm is None)
        return {"skip_norms": fused if plan.has(SKIP_NORM) else 0}

    def image_dims(self) -> tuple[int | str, int | str]:
        return self.cfg.image_size

    def token_count(self) -> int | str:
        rows, columns = self.cfg.grid
        return rows * columns + len(self.embeddings_cls.leading)

    def encode(self, op, pixel_values):
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        hidden = self.encoder(op, self.embeddings(op, pixel_values), kernel)
        return hidden if self.layernorm is None else self.layernorm(op, hidden)

    def pool(self, op, hidden):
        """pooler_output [batch, width] and its width, or None without a pooler."""
        if self.pooler is None:
            return None
        return self.pooler(op, hidden), self.pooler.size

    def forward(self, op, pixel_values) -> Features:
        hidden = self.encode(op, pixel_values)
        dims = [BATCH, self.token_count(), self.cfg.hidden_size]
        pooled = self.pool(op, hidden)
        if pooled is None:
            return Features(hidden, dims)
        return Features(hidden, dims, pooled[0], [BATCH, pooled[1]])

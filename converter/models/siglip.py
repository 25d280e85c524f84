"""SigLIP and SigLIP 2: CLIP's towers without projections or a causal mask. The text is pooled
at its last position (padding included, as trained) through a `head`; the vision tower (no
class token) pools by attention from a learned probe (`head`); the similarities get a learned
bias. SigLIP 2's NaFlex vision tower reads patches of images of any aspect ratio, resizing its
position grid to each image's."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.components.encoder_attention import encoder_attention
from converter.config.two_tower import TextTower, TwoTowerRules, VisionTower
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA
from converter.models.clip import PatchConv, TextEmbeddings
from converter.models.encoder import Table
from converter.models.tower import TowerEncoder, TowerMlp, skip_norms
from converter.models.two_tower import IMAGE_CLASSIFICATION, TwoTowerModel
from converter.registry import Family
from converter.tasks.zero_shot import PATCHES, ZERO_SHOT


class SiglipTextTransformer(nn.Module):
    def __init__(self, cfg: TextTower, dtype: ir.DataType, ep):
        super().__init__()
        self.embeddings = TextEmbeddings(cfg, dtype)
        self.encoder = TowerEncoder(cfg, dtype)
        self.final_layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.head = Linear(cfg.hidden_size, cfg.projection_size, True, dtype)
        self.ep, self.dtype, self.width = ep, dtype, cfg.hidden_size

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(plan, 1)  # final_layer_norm reads the last layer's sum

    def forward(self, op, text):
        kernel = encoder_attention(op, self.ep, text.attention_mask, self.dtype)
        hidden = self.encoder(op, self.embeddings(op, text.input_ids), kernel)
        hidden = self.final_layer_norm(op, hidden)
        last = op.Gather(hidden, -1, axis=1)
        return hidden, self.head(op, last)


class PoolingAttention(nn.Module):
    """torch.nn.MultiheadAttention's parameters: q, k and v rows packed in in_proj_*."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.in_proj_weight = nn.Parameter([3 * size, size], dtype)
        self.in_proj_bias = nn.Parameter([3 * size], dtype)
        self.out_proj = Linear(size, size, True, dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, query, x, kernel):
        weights = op.Split(self.in_proj_weight, axis=0, num_outputs=3, _outputs=3)
        biases = op.Split(self.in_proj_bias, axis=0, num_outputs=3, _outputs=3)
        q, k, v = (
            op.Add(op.MatMul(source, op.Transpose(w, perm=[1, 0])), b)
            for source, w, b in zip((query, x, x), weights, biases, strict=True)
        )
        return self.out_proj(op, kernel(op, q, k, v, self.heads, self.scale))


class AttentionPoolingHead(nn.Module):
    """A learned probe attends over the tokens; then probe + mlp(layernorm(probe))."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        self.probe = nn.Parameter([1, 1, cfg.hidden_size], dtype)
        self.attention = PoolingAttention(cfg, dtype)
        self.layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = TowerMlp(cfg, dtype)

    def forward(self, op, hidden, kernel):
        batch = op.Shape(hidden, start=0, end=1)
        probe = op.Expand(self.probe, op.Concat(batch, [1, 1], axis=0))
        x = self.attention(op, probe, hidden, kernel)
        x = op.Add(x, self.mlp(op, self.layernorm(op, x)))
        return op.Squeeze(x, [1])


class SiglipVisionEmbeddings(nn.Module):
    """The patches (a biased Conv2d) plus position_embedding."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        self.patch_embedding = PatchConv(cfg, dtype, bias=True)
        self.tokens = (cfg.image_size // cfg.patch_size) ** 2
        self.position_embedding = Table(self.tokens, cfg.hidden_size, dtype)

    def forward(self, op, image):
        patches = self.patch_embedding(op, image.pixel_values)
        positions = self.position_embedding(op, op.Range(0, self.tokens, 1))
        return op.Add(patches, op.Unsqueeze(positions, [0]))


class NaflexEmbeddings(nn.Module):
    """Patches already cut by the processor (a Linear over each), plus the square position grid
    resized to each image's rows x columns of patches (bilinear, antialiased: what
    `F.interpolate(..., antialias=True)` computes, written as transformers writes it, one
    weight per grid cell and output patch), padding patches taking the first one's."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        width = cfg.num_channels * cfg.patch_size**2
        self.patch_embedding = Linear(width, cfg.hidden_size, True, dtype)
        self.position_embedding = Table(cfg.num_patches, cfg.hidden_size, dtype)
        self.grid, self.dtype = round(cfg.num_patches**0.5), dtype
        self.tokens = PATCHES

    def forward(self, op, image):
        patches = self.patch_embedding(op, image.pixel_values)
        weights = self.resize_weights(op, image.spatial_shapes, op.Shape(patches, start=1, end=2))
        table = self.position_embedding(op, op.Range(0, self.grid**2, 1))
        f32 = ir.DataType.FLOAT
        if self.dtype != f32:  # transformers resizes in float32
            table = op.Cast(table, to=f32)
        positions = op.MatMul(weights, table)
        if self.dtype != f32:
            positions = op.Cast(positions, to=self.dtype)
        return op.Add(patches, positions)

    def resize_weights(self, op, spatial_shapes, length):
        """[batch, patches, grid²]: each output patch's weight on each grid cell."""
        f32 = ir.DataType.FLOAT
        sizes = op.Unsqueeze(op.Cast(spatial_shapes, to=f32), [1])  # [batch, 1, 2]
        count = op.Cast(op.Squeeze(length, [0]), to=f32)
        positions = op.Reshape(op.Range(0.0, count, 1.0), [1, -1, 1])  # [1, patches, 1]
        columns = op.Slice(sizes, [1], [2], [2])
        rows = op.Floor(op.Div(positions, columns))
        index = op.Concat(rows, op.Sub(positions, op.Mul(rows, columns)), axis=-1)
        inside = op.Less(positions, op.ReduceProd(sizes, [-1], keepdims=1))
        index = op.Mul(index, op.Cast(inside, to=f32))  # [batch, patches, 2]
        scale = op.Div(float(self.grid), sizes)  # [batch, 1, 2]
        support = op.Max(scale, 1.0)
        center = op.Sub(op.Mul(op.Add(index, 0.5), scale), 0.5)
        source = op.Range(0.0, float(self.grid), 1.0)  # [grid]
        distance = op.Abs(op.Sub(source, op.Unsqueeze(center, [-1])))  # [batch, patches, 2, grid]
        weights = op.Max(op.Sub(1.0, op.Div(distance, op.Unsqueeze(support, [-1]))), 0.0)
        weights = op.Div(weights, op.ReduceSum(weights, [-1], keepdims=1))
        along_rows, along_columns = op.Split(weights, axis=2, num_outputs=2, _outputs=2)
        # [batch, patches, grid, 1] x [batch, patches, 1, grid]
        cells = op.Mul(op.Transpose(along_rows, perm=[0, 1, 3, 2]), along_columns)
        return op.Reshape(cells, op.Concat(op.Shape(cells, start=0, end=2), [-1], axis=0))


class SiglipVisionTransformer(nn.Module):
    """Embeddings, the stack, post_layernorm over every token, the attention-pooling head."""

    embeddings_cls = SiglipVisionEmbeddings
    naflex = False

    def __init__(self, cfg: VisionTower, dtype: ir.DataType, ep, pooled=True):
        super().__init__()
        if pooled and not cfg.use_head:
            raise ConfigError(
                "vision_config: 'vision_use_head' = False leaves the image without a pooled "
                "embedding for the zero-shot model"
            )
        self.embeddings = self.embeddings_cls(cfg, dtype)
        self.encoder = TowerEncoder(cfg, dtype)
        self.post_layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.head = AttentionPoolingHead(cfg, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype
        self.width, self.tokens = cfg.hidden_size, self.embeddings.tokens

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(plan, 1)  # post_layernorm reads the last layer's sum

    def forward(self, op, image):
        mask = image.pixel_attention_mask
        kernel = encoder_attention(op, self.ep, mask, self.dtype)
        hidden = self.encoder(op, self.embeddings(op, image), kernel)
        hidden = self.post_layernorm(op, hidden)
        if self.head is None:
            return hidden, None
        probe_kernel = kernel if mask is None else self._probe_kernel(op, mask)
        return hidden, self.head(op, hidden, probe_kernel)

    def _probe_kernel(self, op, mask):
        return encoder_attention(op, self.ep, mask, self.dtype, queries=1)


class Siglip2VisionTransformer(SiglipVisionTransformer):
    embeddings_cls = NaflexEmbeddings


class SiglipModel(TwoTowerModel):
    text_cls = SiglipTextTransformer
    vision_cls = SiglipVisionTransformer
    heads = (ZERO_SHOT, IMAGE_CLASSIFICATION)
    scale_shape = (1,)
    biased = True
    # SiglipTextModel's and SiglipVisionModel's name for them (what Transformers.js reads)
    feature_names = ("pooler_output", "pooler_output")


class Siglip2Model(SiglipModel):
    vision_cls = Siglip2VisionTransformer
    # Siglip2ForImageClassification reads NaFlex patches, which the image-classification task's
    # one pixel_values input does not carry
    heads = (ZERO_SHOT,)


FAMILIES = [
    Family(
        "siglip",
        SiglipModel,
        "two towers without projections: the text pooled at its last position, the image by an "
        "attention-pooling head; sigmoid scores with a learned bias",
        ("google/siglip-base-patch16-224", "google/siglip-so400m-patch14-384"),
        rules=TwoTowerRules("siglip_text_model", "siglip_vision_model", projections=False),
        task="zero-shot-image-classification",
        category="multimodal",
        # the attention-pooling head SiglipForImageClassification computes and drops
        unused=(r"vision_model\.head\..*",),
    ),
    Family(
        "siglip2",
        Siglip2Model,
        "SigLIP with NaFlex vision: processor-cut patches of any aspect ratio with their mask "
        "and grid shapes, the position grid resized to each image",
        ("google/siglip2-base-patch16-naflex",),
        rules=TwoTowerRules(
            "siglip2_text_model", "siglip2_vision_model", projections=False, naflex=True
        ),
        task="zero-shot-image-classification",
        category="multimodal",
    ),
]

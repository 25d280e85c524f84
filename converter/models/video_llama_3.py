"""VideoLLaMA 3's image path: a SigLIP-style tower over the processor's flattened patches with
2-D rotary (each image attending within its frame), then each image's patches merged by its
own merge size and projected into Qwen2 (1-D positions).

The vision graph reads the "merged_patches" layout: pixel_values [num_patches, channels *
patch²] (rows per image, per frame, per merge block of m² patches), image_grid_thw
[num_images, 3] and image_merge_sizes [num_images] (m: 1 for the image processor's images, 2
for its video frames). transformers merges by bilinear downsampling by m with half-pixel
centres, which for a whole factor m is the mean of the two middle rows (one when m is odd) by
the two middle columns of each merge block: the graph gathers those four patches and averages.

Video is not converted: its frames would run through this graph, but the prompt's video tokens
and their compression mask are not merged by the embedding graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, PlainMLP, activation
from converter.components.encoder_attention import BlockAttention
from converter.config.patch_tower import PatchTowerConfig
from converter.config.reader import MAX_DIM, MAX_LAYERS, ConfigReader
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA
from converter.models.pixtral import locate
from converter.models.qwen_vl import PatchGrid, Rotary, axial_rotary, rotate, same
from converter.models.vision_language import VisionLanguageModel
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


@dataclass(frozen=True)
class VideoLlama3VisionConfig(PatchTowerConfig):
    layer_norm_eps: float
    rope_theta: float
    mlp_bias = True  # what PlainMLP reads


class VideoLlama3Rules(VisionLanguageRules):
    text_type = "qwen2"
    vision_type = "video_llama_3_vision"

    def read_vision(self, r: ConfigReader) -> VideoLlama3VisionConfig:
        hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
        if hidden % heads or (hidden // heads) % 4:
            raise ConfigError(
                f"'hidden_size' = {hidden} over 'num_attention_heads' = {heads} must give a "
                "head size divisible by 4 (its rotary halves rows and columns)"
            )
        rope = r.get("rope_parameters") or {}
        if rope.get("rope_type", "axial") != "axial":
            raise ConfigError(f"'rope_parameters' = {rope!r}: the vision rope is axial only")
        patch = r.get("patch_size")
        if not isinstance(patch, int) or isinstance(patch, bool) or not 1 <= patch <= 1024:
            raise ConfigError(f"'patch_size' = {patch!r}: one square patch side is supported")
        return VideoLlama3VisionConfig(
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            num_channels=r.int("num_channels", default=3, hi=64),
            patch_size=patch,
            activation=r.str("hidden_act"),
            layer_norm_eps=r.float("layer_norm_eps"),
            rope_theta=float(rope.get("rope_theta", 10000.0)),
        )


class PatchEmbedding(nn.Module):
    """The Conv2d whose kernel equals its stride: one MatMul of each flattened patch."""

    def __init__(self, cfg: VideoLlama3VisionConfig, dtype: ir.DataType):
        super().__init__()
        p = cfg.patch_size
        self.weight = nn.Parameter([cfg.hidden_size, cfg.num_channels, p, p], dtype)
        self.bias = nn.Parameter([cfg.hidden_size], dtype)
        self.width, self.hidden = cfg.patch_width, cfg.hidden_size

    def forward(self, op, patches):
        kernel = op.Reshape(self.weight, [self.hidden, self.width])
        return op.Add(op.MatMul(patches, op.Transpose(kernel, perm=[1, 0])), self.bias)


class Embeddings(nn.Module):
    def __init__(self, cfg: VideoLlama3VisionConfig, dtype: ir.DataType):
        super().__init__()
        self.patch_embedding = PatchEmbedding(cfg, dtype)

    def forward(self, op, patches):
        return self.patch_embedding(op, patches)


class SelfAttention(nn.Module):
    def __init__(self, cfg: VideoLlama3VisionConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.q_proj = Linear(size, size, True, dtype)
        self.k_proj = Linear(size, size, True, dtype)
        self.v_proj = Linear(size, size, True, dtype)
        self.out_proj = Linear(size, size, True, dtype)
        self.heads, self.head_dim, self.size, self.dtype = (
            cfg.num_attention_heads,
            cfg.head_dim,
            size,
            dtype,
        )

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, rotary: Rotary, attention: BlockAttention):
        def heads(proj):
            return op.Reshape(proj(op, x), [0, self.heads, self.head_dim])

        def packed(value):
            return op.Reshape(value, [1, -1, self.size])

        q = packed(rotate(op, heads(self.q_proj), rotary, self.dtype))
        k = packed(rotate(op, heads(self.k_proj), rotary, self.dtype))
        v = packed(self.v_proj(op, x))
        out = attention(op, q, k, v, self.heads, self.head_dim**-0.5)
        return self.out_proj(op, op.Reshape(out, [-1, self.size]))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: VideoLlama3VisionConfig, dtype: ir.DataType):
        super().__init__()
        self.layer_norm1 = LayerNorm(cfg.hidden_size, cfg.layer_norm_eps, dtype)
        self.self_attn = SelfAttention(cfg, dtype)
        self.layer_norm2 = LayerNorm(cfg.hidden_size, cfg.layer_norm_eps, dtype)
        self.mlp = PlainMLP(cfg, dtype)

    def forward(self, op, x, rotary: Rotary, attention: BlockAttention):
        x = op.Add(x, self.self_attn(op, self.layer_norm1(op, x), rotary, attention))
        return op.Add(x, self.mlp(op, self.layer_norm2(op, x)))


class Encoder(nn.Module):
    def __init__(self, cfg: VideoLlama3VisionConfig, dtype: ir.DataType):
        super().__init__()
        self.layers = nn.ModuleList(
            [EncoderLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        )

    def forward(self, op, x, rotary: Rotary, attention: BlockAttention):
        for layer in self.layers:
            x = layer(op, x, rotary, attention)
        return x


def places(op, grid, merge) -> tuple[PatchGrid, ir.Value]:
    """Every patch's place (rows in merge blocks of its image's size m, block-major) and its m."""
    t, h, w = (op.Gather(grid, i, axis=1) for i in range(3))
    area = op.Mul(h, w)
    image, within = locate(op, op.Mul(t, area))
    m, width, area = op.Gather(merge, image), op.Gather(w, image), op.Gather(area, image)
    rest, block_area = op.Mod(within, area), op.Mul(m, m)
    block, inner = op.Div(rest, block_area), op.Mod(rest, block_area)
    blocks_wide = op.Div(width, m)
    block_row, block_col = op.Div(block, blocks_wide), op.Mod(block, blocks_wide)
    row = op.Add(op.Mul(block_row, m), op.Div(inner, m))
    col = op.Add(op.Mul(block_col, m), op.Mod(inner, m))
    frame = op.Div(within, area)
    return PatchGrid(image, frame, row, col, block_row, block_col, op.Gather(h, image), width), m


def downsample(op, x, grid, merge) -> ir.Value:
    """Each merge block's bilinear sample at its centre: the mean of its middle two rows by
    middle two columns (the same one twice where m is odd)."""
    t, h, w = (op.Gather(grid, i, axis=1) for i in range(3))
    blocks = op.Mul(op.Mul(op.Div(h, merge), op.Div(w, merge)), t)
    image, block = locate(op, blocks)
    m = op.Gather(merge, image)
    starts = op.Sub(op.CumSum(op.Mul(op.Mul(t, h), w), 0), op.Mul(op.Mul(t, h), w))
    first = op.Add(op.Gather(starts, image), op.Mul(block, op.Mul(m, m)))
    low, high = op.Div(op.Sub(m, 1), 2), op.Div(m, 2)
    total = None
    for r in (low, high):
        for c in (low, high):
            patch = op.Gather(x, op.Add(first, op.Add(op.Mul(r, m), c)))
            total = patch if total is None else op.Add(total, patch)
    return op.Mul(total, op.CastLike(0.25, total))


class VisionModel(nn.Module):
    def __init__(self, cfg: VideoLlama3VisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.embeddings = Embeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)
        self.post_layernorm = LayerNorm(cfg.hidden_size, cfg.layer_norm_eps, dtype)
        self.cfg, self.dtype, self.ep = cfg, dtype, ep

    def forward(self, op, pixels, grid, merge):
        x = self.embeddings(op, pixels)
        where, _ = places(op, grid, merge)
        rotary = axial_rotary(op, where, self.cfg.head_dim, self.cfg.rope_theta)
        attention = BlockAttention(op, self.ep, same(op, where.image, where.frame), self.dtype)
        x = self.post_layernorm(op, self.encoder(op, x, rotary, attention))
        return downsample(op, x, grid, merge)


class Readout(nn.Module):
    """transformers' Sequential(Linear, GELU, Linear): its linears are `0` and `2`."""

    def __init__(self, width: int, out: int, dtype: ir.DataType):
        super().__init__()
        setattr(self, "0", Linear(width, out, True, dtype))
        setattr(self, "2", Linear(out, out, True, dtype))

    def forward(self, op, x):
        return getattr(self, "2")(op, activation(op, "gelu", getattr(self, "0")(op, x)))


class Projector(nn.Module):
    def __init__(self, width: int, out: int, dtype: ir.DataType):
        super().__init__()
        self.readout = Readout(width, out, dtype)

    def forward(self, op, x):
        return self.readout(op, x)


class VideoLlama3Model(VisionLanguageModel):
    image_layout = "merged_patches"

    def make_vision(self, cfg, dtype, ep) -> None:
        self.vision_model = VisionModel(cfg.vision, dtype, ep)
        self.projector = Projector(cfg.vision.hidden_size, cfg.text.hidden_size, dtype)

    def image_features(self, op, image) -> ir.Value:
        x = self.vision_model(op, image.pixel_values, image.image_grid_thw, image.merge_sizes)
        return self.projector(op, x)


FAMILIES = [
    Family(
        "video_llama_3",
        VideoLlama3Model,
        "a SigLIP-style ViT over flattened patches with 2-D rotary and attention within each "
        "frame, each image's merge blocks downsampled bilinearly, and a GELU projector, into "
        "Qwen2 (images only: video tokens are not merged)",
        ("lkhl/VideoLLaMA3-2B-Image-HF",),
        rules=VideoLlama3Rules(),
        task=VLM_TASK,
        category="vlm",
        renames=(
            (r"^model\.language_model\.", "language_model.model."),
            (r"^model\.(vision_model|projector)\.", r"\1."),
            (r"^lm_head\.", "language_model.lm_head."),
        ),
    ),
]

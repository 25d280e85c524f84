"""TIPSv2: a DINOv2-with-registers vision tower pooled at its normed class token beside a
non-causal pre-norm text tower (token embeddings scaled by sqrt(hidden_size), fixed
tensor2tensor sinusoids for positions) mean-pooled over its real tokens; neither is projected,
and the cosine similarities are divided by a learned `temperature` (transformers' own value
from `temperature_init_value` where a checkpoint lacks it, as the published ones do).

The checkpoints keep the original towers' names, which transformers renames on load: timm's
ViT (`blocks.N.attn.qkv`, `ls1.gamma`, `pos_embed`, the SwiGLU's `w12` and `w3`) and torch's
MultiheadAttention in CLIP's `transformer.resblocks.N` (`in_proj_weight`, `ln_1`, `mlp.c_fc`);
the modules here carry them.
The graph takes images of the configured size only, where transformers uses the position table
unresized."""

from __future__ import annotations

import math
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.encoder_attention import encoder_attention
from converter.components.positions import SinusoidalPositions, fairseq_frequencies
from converter.config.two_tower import TextTower, TwoTowerRules
from converter.config.vision import VisionConfig
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA
from converter.models.dinov2 import Dinov2Rules
from converter.models.encoder import Table
from converter.models.tower import skip_norms
from converter.models.two_tower import TwoTowerModel
from converter.registry import Family
from converter.tasks.zero_shot import ZERO_SHOT


@dataclass(frozen=True)
class Tipsv2TextTower(TextTower):
    embed_scale: float  # sqrt(hidden_size) with `scale_sqrt_depth`, else 1
    pooling_epsilon: float  # added to the real-token count of the mean


@dataclass(frozen=True)
class Tipsv2VisionSection:
    """The DINOv2 body's config as the zero-shot task reads image inputs (square images)."""

    body: VisionConfig
    image_size: int
    num_channels: int
    hidden_size: int
    num_patches: None = None


class Tipsv2Rules(TwoTowerRules):
    def __init__(self) -> None:
        super().__init__("tipsv2_text_model", "tipsv2_vision_model", projections=False)

    def read_extra(self, r):
        temperature = r.float("temperature_init_value")
        if temperature <= 0:
            r.refuse("temperature_init_value", "the similarities are divided by it")
        return {"temperature": temperature}

    def read_text(self, r) -> Tipsv2TextTower:
        tower = super().read_text(r)
        if tower.hidden_size % 2:
            raise ConfigError(f"'hidden_size' = {tower.hidden_size}: its sinusoids need it even")
        scale = math.sqrt(tower.hidden_size) if r.bool("scale_sqrt_depth", True) else 1.0
        fields = {k: getattr(tower, k) for k in tower.__dataclass_fields__}
        return Tipsv2TextTower(
            **fields, embed_scale=scale, pooling_epsilon=r.float("pooling_epsilon")
        )

    def read_vision(self, r) -> Tipsv2VisionSection:
        body = Dinov2Rules().read(r)
        if not body.qkv_bias:
            r.refuse("qkv_bias", "the released towers' qkv has a bias; none is built without")
        height, width = body.image_size
        if height != width:
            r.refuse("image_size", "the zero-shot graph takes square images")
        return Tipsv2VisionSection(body, height, body.num_channels, body.hidden_size)


class PackedAttention(nn.Module):
    """q, k and v rows packed in one projection: the text tower's `in_proj_*` and `out_proj`
    (torch's MultiheadAttention), the vision tower's `qkv` and `proj` (timm's)."""

    def __init__(self, size: int, heads: int, dtype: ir.DataType, timm: bool):
        super().__init__()
        if timm:
            self.qkv, self.proj = (
                Linear(size, 3 * size, True, dtype),
                Linear(size, size, True, dtype),
            )
        else:
            self.in_proj_weight = nn.Parameter([3 * size, size], dtype)
            self.in_proj_bias = nn.Parameter([3 * size], dtype)
            self.out_proj = Linear(size, size, True, dtype)
        self.timm, self.heads, self.scale = timm, heads, (size // heads) ** -0.5

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, kernel):
        if self.timm:
            packed = self.qkv(op, x)
        else:
            weight = op.Transpose(self.in_proj_weight, perm=[1, 0])
            packed = op.Add(op.MatMul(x, weight), self.in_proj_bias)
        q, k, v = op.Split(packed, axis=-1, num_outputs=3, _outputs=3)
        out = self.proj if self.timm else self.out_proj
        return out(op, kernel(op, q, k, v, self.heads, self.scale))


class Mlp(nn.Module):
    """c_fc, activation, c_proj."""

    def __init__(self, size: int, inner: int, act: str, dtype: ir.DataType):
        super().__init__()
        self.c_fc = Linear(size, inner, True, dtype)
        self.c_proj = Linear(inner, size, True, dtype)
        self.act = act

    def forward(self, op, x):
        return self.c_proj(op, activation(op, self.act, self.c_fc(op, x)))


class SwiGlu(nn.Module):
    """w3(silu(gate) * up), gate and up the two halves of `w12`'s rows."""

    def __init__(self, size: int, inner: int, dtype: ir.DataType):
        super().__init__()
        self.w12 = Linear(size, 2 * inner, True, dtype)
        self.w3 = Linear(inner, size, True, dtype)

    def forward(self, op, x):
        gate, up = op.Split(self.w12(op, x), axis=-1, num_outputs=2, _outputs=2)
        return self.w3(op, op.Mul(activation(op, "silu", gate), up))


class ResBlock(nn.Module):
    """Pre-norm: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, cfg: Tipsv2TextTower, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.ln_1 = LayerNorm(size, cfg.norm_eps, dtype)
        self.attn = PackedAttention(size, cfg.num_attention_heads, dtype, timm=False)
        self.ln_2 = LayerNorm(size, cfg.norm_eps, dtype)
        self.mlp = Mlp(size, cfg.intermediate_size, cfg.activation, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(plan, 2)  # both norms read a residual sum (the first: the embeddings')

    def forward(self, op, x, kernel):
        x = op.Add(x, self.attn(op, self.ln_1(op, x), kernel))
        return op.Add(x, self.mlp(op, self.ln_2(op, x)))


class Transformer(nn.Module):
    def __init__(self, cfg: Tipsv2TextTower, dtype: ir.DataType):
        super().__init__()
        self.resblocks = nn.ModuleList([ResBlock(cfg, dtype) for _ in range(cfg.num_hidden_layers)])

    def forward(self, op, x, kernel):
        for block in self.resblocks:
            x = block(op, x, kernel)
        return x


class Tipsv2TextTransformer(nn.Module):
    """token_embedding * embed_scale + sinusoids of positions 0, 1, ..., the stack (padding
    masked), ln_final; the mean of the real tokens' states is the pooled output."""

    def __init__(self, cfg: Tipsv2TextTower, dtype: ir.DataType, ep):
        super().__init__()
        self.token_embedding = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        self.positions = SinusoidalPositions(fairseq_frequencies(cfg.hidden_size), dtype)
        self.transformer = Transformer(cfg, dtype)
        self.ln_final = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.cfg, self.ep, self.dtype, self.width = cfg, ep, dtype, cfg.hidden_size

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(plan, 1)  # ln_final reads the last block's sum

    def embed(self, op, input_ids):
        length = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
        positions = self.positions(op, op.Unsqueeze(op.Range(0, length, 1), [0]))
        tokens = self.token_embedding(op, input_ids)
        if self.cfg.embed_scale != 1.0:
            tokens = op.Mul(tokens, self.cfg.embed_scale)
        return op.Add(tokens, positions)

    def forward(self, op, text):
        kernel = encoder_attention(op, self.ep, text.attention_mask, self.dtype)
        hidden = self.transformer(op, self.embed(op, text.input_ids), kernel)
        hidden = self.ln_final(op, hidden)
        mask = op.Unsqueeze(op.Cast(text.attention_mask, to=self.dtype), [-1])
        total = op.ReduceSum(op.Mul(hidden, mask), [1], keepdims=0)
        count = op.Add(op.ReduceSum(mask, [1], keepdims=0), self.cfg.pooling_epsilon)
        return hidden, op.Div(total, count)


class Gamma(nn.Module):
    """A per-channel layer scale."""

    def __init__(self, size: int, dtype: ir.DataType):
        super().__init__()
        self.gamma = nn.Parameter([size], dtype)

    def forward(self, op, x):
        return op.Mul(x, self.gamma)


class Block(nn.Module):
    """Pre-norm with layer scales: x + ls1(attn(norm1(x))), then x + ls2(mlp(norm2(x)))."""

    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.norm1 = LayerNorm(size, cfg.norm_eps, dtype)
        self.attn = PackedAttention(size, cfg.heads[0], dtype, timm=True)
        self.ls1 = Gamma(size, dtype)
        self.norm2 = LayerNorm(size, cfg.norm_eps, dtype)
        inner = cfg.intermediate_sizes[0]
        if cfg.extra["swiglu"]:
            self.mlp = SwiGlu(size, inner, dtype)
        else:
            self.mlp = Mlp(size, inner, cfg.activation, dtype)
        self.ls2 = Gamma(size, dtype)

    def forward(self, op, x, kernel):
        x = op.Add(x, self.ls1(op, self.attn(op, self.norm1(op, x), kernel)))
        return op.Add(x, self.ls2(op, self.mlp(op, self.norm2(op, x))))


class PatchEmbed(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: ir.DataType):
        super().__init__()
        patch = cfg.patch_size
        self.proj = Conv2d(cfg.num_channels, cfg.hidden_size, patch, dtype, stride=patch)

    def forward(self, op, pixels):
        maps = self.proj(op, pixels)
        return op.Transpose(op.Reshape(maps, [0, 0, -1]), perm=[0, 2, 1])


class Tipsv2VisionTower(nn.Module):
    """cls_token + pos_embed, register_tokens, the patches + pos_embed; the blocks; `norm`,
    whose class token is the pooled output."""

    def __init__(self, cfg: Tipsv2VisionSection, dtype, ep, pooled: bool = True):
        super().__init__()
        body, size = cfg.body, cfg.hidden_size
        rows, columns = body.grid
        registers = body.extra["registers"]
        self.cls_token = nn.Parameter([1, 1, size], dtype)
        # stored even when empty
        self.register_tokens = nn.Parameter([1, registers, size], dtype)
        self.pos_embed = nn.Parameter([1, 1 + rows * columns, size], dtype)
        self.patch_embed = PatchEmbed(body, dtype)
        self.blocks = nn.ModuleList([Block(body, dtype) for _ in range(body.num_hidden_layers)])
        self.norm = LayerNorm(size, body.norm_eps, dtype)
        self.ep, self.dtype, self.width = ep, dtype, size
        self.tokens = 1 + registers + rows * columns
        self.layers, self.registers = body.num_hidden_layers, registers

    def expected_fusions(self, plan) -> dict[str, int]:
        # each block's attention sum feeds its norm2, its MLP sum the next norm1 or `norm`; the
        # first norm1 reads the registers' concatenation, or a sum with the broadcast pos_embed,
        # which the fusion leaves alone
        return skip_norms(plan, 2 * self.layers)

    def embed(self, op, pixels):
        batch = op.Shape(pixels, start=0, end=1)
        patches = self.patch_embed(op, pixels)
        size = self.width
        first = op.Expand(self.cls_token, op.Concat(batch, [1, size], axis=0))
        x = op.Add(op.Concat(first, patches, axis=1), self.pos_embed)
        if self.registers == 0:
            return x
        shape = op.Concat(batch, [self.registers, size], axis=0)
        registers = op.Expand(self.register_tokens, shape)
        rest = op.Slice(x, [1], [2**62], [1])
        return op.Concat(op.Slice(x, [0], [1], [1]), registers, rest, axis=1)

    def forward(self, op, image):
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        x = self.embed(op, image.pixel_values)
        for block in self.blocks:
            x = block(op, x, kernel)
        hidden = self.norm(op, x)
        return hidden, op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])


class Tipsv2Model(TwoTowerModel):
    text_cls = Tipsv2TextTransformer
    vision_cls = Tipsv2VisionTower
    heads = (ZERO_SHOT,)

    def __init__(self, cfg, dtype, ep, task, tensors, part="both"):
        self.stored_temperature = "temperature" in tensors
        super().__init__(cfg, dtype, ep, task, tensors, part)

    def make_scale(self, dtype):
        self.temperature = nn.Parameter([], dtype) if self.stored_temperature else None

    def scaled(self, op, similarities):
        if self.temperature is None:
            return op.Div(similarities, self.cfg.extra["temperature"])
        return op.Div(similarities, self.temperature)


FAMILIES = [
    Family(
        "tipsv2",
        Tipsv2Model,
        "a DINOv2-with-registers vision tower (normed class token) and a non-causal text tower "
        "with scaled embeddings, sinusoidal positions and masked mean pooling; unprojected, "
        "similarities divided by a temperature",
        ("google/tipsv2-b14",),
        rules=Tipsv2Rules(),
        task="zero-shot-image-classification",
        category="multimodal",
        unused=(r"(vision_encoder|vision_model)\.mask_token",),
        # the checkpoints keep the original towers' names (transformers renames them on load)
        renames=((r"^text_encoder\.", "text_model."), (r"^vision_encoder\.", "vision_model.")),
    ),
]

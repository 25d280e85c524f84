"""Ovis2 (transformers' `ovis2`, the -hf checkpoints): an AIMv2-style ViT (patch convolution,
RMSNorm, learned positions; pre-RMSNorm layers of attention and a SwiGLU MLP; a final RMSNorm)
whose patch states, merged `hidden_stride` x `hidden_stride` blocks into one token, go through
`head_linear` and `head_norm` (a LayerNorm) to a softmax over a visual vocabulary. An image
token's feature is the soft lookup of that distribution in `visual_embeddings_table` (the
probabilities times the table), whose last `num_visual_indicator_tokens` rows never take part:
they are the embeddings of the prompt's visual indicator tokens (`visual_indicator_token_ids`),
which replace those tokens' text rows. The decoder is Qwen2 (or the text model config.json
names). The vision graph reads pixel_values [num_images, 3, image_size, image_size]."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, RMSNorm
from converter.components.conv2d import Conv2d
from converter.components.encoder_attention import encoder_attention
from converter.components.mlp import GatedMLP
from converter.components.pixel_shuffle import pixel_shuffle
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.config.vision import MAX_IMAGE_SIDE
from converter.config.vision_language import VisionLanguageRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.llava import LLAVA_RENAMES
from converter.models.vision_language import VisionLanguageModel, merge_image_features
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK

HEAD_NORM_EPS = 1e-5  # transformers builds head_norm with torch's default epsilon


@dataclass(frozen=True)
class Ovis2VisionConfig:
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    norm_eps: float
    activation: str
    num_channels: int
    image_size: int
    patch_size: int
    qkv_bias: bool  # q/k/v and out_proj
    mlp_bias: bool
    hidden_stride: int  # the side of the block of patches one token merges
    vocab_size: int  # the visual vocabulary, the indicator tokens' rows included
    indicators: int  # num_visual_indicator_tokens: the table's last rows
    fused_gate_up = False  # GatedMLP: gate_proj and up_proj stored apart

    @property
    def side(self) -> int:
        return self.image_size // self.patch_size


class Ovis2Rules(VisionLanguageRules):
    text_type = "qwen2"
    vision_type = "ovis2_vision"
    tie_from_text = False

    def read_vision(self, r: ConfigReader) -> Ovis2VisionConfig:
        image, patch = (
            r.int("image_size", hi=MAX_IMAGE_SIDE),
            r.int("patch_size", hi=MAX_IMAGE_SIDE),
        )
        if image % patch:
            raise ConfigError(f"'image_size' = {image} is not a multiple of 'patch_size'")
        hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        stride = r.int("hidden_stride", hi=64)
        if (image // patch) % stride:
            # transformers pads the grid with zero states first: not built
            r.refuse("hidden_stride", f"must divide the {image // patch}-patch grid side")
        function = r.str("tokenize_function")
        if function != "softmax":
            # gumbel_argmax samples; st_argmax is a one-hot of the argmax: not built
            r.refuse("tokenize_function", "softmax only")
        vocab = r.int("vocab_size", hi=MAX_VOCAB)
        indicators = r.int("num_visual_indicator_tokens", lo=0, hi=vocab - 1)
        return Ovis2VisionConfig(
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            norm_eps=r.float("rms_norm_eps"),
            activation=r.str("hidden_act"),
            num_channels=r.int("num_channels", default=3, hi=64),
            image_size=image,
            patch_size=patch,
            qkv_bias=r.bool("qkv_bias", False),
            mlp_bias=r.bool("mlp_bias", False),
            hidden_stride=stride,
            vocab_size=vocab,
            indicators=indicators,
        )

    def read_extra(self, r: ConfigReader, text, vision: Ovis2VisionConfig) -> dict:
        width = r.int("hidden_size")
        if width != text.hidden_size:
            raise ConfigError(
                f"'hidden_size' = {width} (the visual table's width) is not the text model's "
                f"{text.hidden_size}"
            )
        ids = r.get("visual_indicator_token_ids")
        if not isinstance(ids, list | tuple) or not all(
            isinstance(i, int) and 0 <= i < text.vocab_size for i in ids
        ):
            r.refuse("visual_indicator_token_ids", "token ids of the text vocabulary")
        if len(ids) > vision.indicators:
            r.refuse(
                "visual_indicator_token_ids",
                f"at most num_visual_indicator_tokens ({vision.indicators}) ids",
            )
        return {"indicator_ids": tuple(ids)}


class Ovis2Embeddings(nn.Module):
    """`patch_embedding`, `rms_norm` over the patches, plus `position_embedding`."""

    def __init__(self, cfg: Ovis2VisionConfig, dtype: ir.DataType):
        super().__init__()
        size, patch = cfg.hidden_size, cfg.patch_size
        self.patch_embedding = Conv2d(cfg.num_channels, size, patch, dtype, stride=patch)
        self.rms_norm = RMSNorm(size, cfg.norm_eps, dtype)
        self.positions = nn.Parameter([cfg.side**2, size], dtype, "position_embedding.weight")

    def forward(self, op, pixels):
        x = self.patch_embedding(op, pixels)  # [images, hidden, rows, columns]
        x = op.Transpose(op.Reshape(x, [0, 0, -1]), perm=[0, 2, 1])
        return op.Add(self.rms_norm(op, x), self.positions)


class Ovis2Attention(nn.Module):
    def __init__(self, cfg: Ovis2VisionConfig, dtype: ir.DataType):
        super().__init__()
        size, bias = cfg.hidden_size, cfg.qkv_bias
        self.q_proj = Linear(size, size, bias, dtype)
        self.k_proj = Linear(size, size, bias, dtype)
        self.v_proj = Linear(size, size, bias, dtype)
        self.out_proj = Linear(size, size, bias, dtype)
        self.heads = cfg.num_attention_heads
        self.scale = (size // self.heads) ** -0.5

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, kernel):
        q, k, v = self.q_proj(op, x), self.k_proj(op, x), self.v_proj(op, x)
        return self.out_proj(op, kernel(op, q, k, v, self.heads, self.scale))


class Ovis2Layer(nn.Module):
    """x + attention(rms_norm1(x)), then x + ffn(rms_norm2(x))."""

    def __init__(self, cfg: Ovis2VisionConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = Ovis2Attention(cfg, dtype)
        self.ffn = GatedMLP(cfg, dtype)
        self.rms_norm1 = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.rms_norm2 = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # rms_norm2 reads the attention's sum, the next norm (the final rms_norm after the
        # last layer) the MLP's; the positions added to the patches stay unfused
        return {"skip_norms": 2 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, kernel):
        x = op.Add(x, self.attention(op, self.rms_norm1(op, x), kernel))
        return op.Add(x, self.ffn(op, self.rms_norm2(op, x)))


class Ovis2Encoder(nn.Module):
    def __init__(self, cfg: Ovis2VisionConfig, dtype: ir.DataType):
        super().__init__()
        self.layers = nn.ModuleList([Ovis2Layer(cfg, dtype) for _ in range(cfg.num_hidden_layers)])

    def forward(self, op, x, kernel):
        for layer in self.layers:
            x = layer(op, x, kernel)
        return x


class Ovis2Transformer(nn.Module):
    """The embeddings, the layers and the final `rms_norm`."""

    def __init__(self, cfg: Ovis2VisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.embeddings = Ovis2Embeddings(cfg, dtype)
        self.encoder = Ovis2Encoder(cfg, dtype)
        self.rms_norm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.ep, self.dtype = ep, dtype

    def forward(self, op, pixels):
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        return self.rms_norm(op, self.encoder(op, self.embeddings(op, pixels), kernel))


class Ovis2VisionTower(nn.Module):
    """`transformer`, its blocks of patch states merged into tokens, then `head_linear` and
    `head_norm`: the logits over the visual vocabulary (its indicator rows left out)."""

    def __init__(self, cfg: Ovis2VisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.transformer = Ovis2Transformer(cfg, dtype, ep)
        width, visual = cfg.hidden_size * cfg.hidden_stride**2, cfg.vocab_size - cfg.indicators
        self.head_linear = Linear(width, visual, False, dtype)
        self.head_norm = LayerNorm(visual, HEAD_NORM_EPS, dtype)
        self.cfg = cfg

    def forward(self, op, pixels):
        x = self.transformer(op, pixels)
        if self.cfg.hidden_stride > 1:
            x = pixel_shuffle(op, x, self.cfg.side, self.cfg.hidden_stride)
        return self.head_norm(op, self.head_linear(op, x))


class VisualTable(nn.Module):
    """`weight` [visual vocabulary, text hidden]: the soft lookup of distributions over its
    first rows (probabilities @ rows), or its first `indicators` indicator rows."""

    def __init__(self, cfg: Ovis2VisionConfig, width: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([cfg.vocab_size, width], dtype)
        self.visual = cfg.vocab_size - cfg.indicators

    def forward(self, op, probabilities, indicators: int = 0):
        if probabilities is None:
            return op.Slice(self.weight, [self.visual], [self.visual + indicators], [0])
        return op.MatMul(probabilities, op.Slice(self.weight, [0], [self.visual], [0]))


class Ovis2Model(VisionLanguageModel):
    def __init__(self, cfg, dtype, ep, task: str, tensors, part: str = "decoder"):
        super().__init__(cfg, dtype, ep, task, tensors, part)
        if part in ("vision", "embedding"):
            # the vision graph's soft lookup reads it, the embedding graph its indicator rows
            width = cfg.text.hidden_size
            self.visual_embeddings_table = VisualTable(cfg.vision, width, dtype)

    def make_vision(self, cfg, dtype, ep) -> None:
        self.vision_tower = Ovis2VisionTower(cfg.vision, dtype, ep)

    def image_features(self, op, image) -> ir.Value:
        logits = self.vision_tower(op, image.pixel_values)
        probabilities = op.Softmax(logits, axis=-1)
        features = self.visual_embeddings_table(op, probabilities)
        return op.Reshape(features, [-1, self.cfg.text.hidden_size])

    def embed(self, op, input_ids, image_features) -> ir.Value:
        embeds = self.language_model(op, input_ids)
        ids = self.cfg.extra["indicator_ids"]
        rows = self.visual_embeddings_table(op, None, len(ids)) if ids else None
        for i, token in enumerate(ids):
            row = op.Gather(rows, i, axis=0)
            embeds = op.Where(op.Unsqueeze(op.Equal(input_ids, token), [-1]), row, embeds)
        return merge_image_features(op, embeds, input_ids, image_features, self.cfg.image_token_id)


FAMILIES = [
    Family(
        "ovis2",
        Ovis2Model,
        "an AIMv2-style ViT whose merged patch blocks become softmax distributions over a "
        "visual vocabulary, looked up softly in a visual embedding table (which also embeds the "
        "visual indicator tokens), in place of the image tokens of Qwen2 (vision.onnx, "
        "embedding.onnx, model.onnx; onnxruntime runs it, onnxruntime-genai has no Ovis2 type)",
        ("thisisiron/Ovis2-1B-hf",),
        rules=Ovis2Rules(),
        task=VLM_TASK,
        category="vlm",
        renames=(
            *LLAVA_RENAMES,
            (r"^model\.visual_embeddings_table\.", "visual_embeddings_table."),
        ),
    ),
]

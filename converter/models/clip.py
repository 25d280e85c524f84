"""CLIP and MetaCLIP 2: a causal pre-norm text tower pooled at its EOS token and a ViT with a
class token (pre-norm before the stack, post-norm on the pooled class token), projected into one
space (converter/models/two_tower.py)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm
from converter.components.encoder_attention import encoder_attention
from converter.config.two_tower import TextTower, TwoTowerRules, VisionTower
from converter.errors import ConfigError
from converter.models.encoder import Table
from converter.models.tower import TowerEncoder, skip_norms
from converter.models.two_tower import IMAGE_CLASSIFICATION, TwoTowerModel
from converter.registry import Family
from converter.tasks.zero_shot import ZERO_SHOT

LEGACY_EOS = 2  # configs from before transformers PR #24773: the EOS is the highest id


class TextEmbeddings(nn.Module):
    """token_embedding + position_embedding (positions 0, 1, ...)."""

    def __init__(self, cfg: TextTower, dtype: ir.DataType):
        super().__init__()
        self.token_embedding = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        self.position_embedding = Table(cfg.max_position_embeddings, cfg.hidden_size, dtype)

    def forward(self, op, input_ids):
        length = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
        positions = op.Unsqueeze(op.Range(0, length, 1), [0])
        return op.Add(self.token_embedding(op, input_ids), self.position_embedding(op, positions))


class ClipTextTransformer(nn.Module):
    """Embeddings, the causal stack, final_layer_norm; pooled at the first EOS token (or, with
    the legacy EOS id 2, at the highest id, as transformers does; `legacy_eos` False: always
    at the EOS, as MetaCLIP 2 does)."""

    causal = True
    legacy_eos = True

    def __init__(self, cfg: TextTower, dtype: ir.DataType, ep):
        super().__init__()
        eos = cfg.eos_token_id
        if isinstance(eos, bool) or not isinstance(eos, int) or not 0 <= eos < cfg.vocab_size:
            raise ConfigError(
                f"text_config: 'eos_token_id' = {eos!r} must be one token id of the vocabulary "
                f"(vocab_size {cfg.vocab_size}): the text is pooled at it"
            )
        self.embeddings = TextEmbeddings(cfg, dtype)
        self.encoder = TowerEncoder(cfg, dtype)
        self.final_layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.cfg, self.ep, self.dtype, self.width = cfg, ep, dtype, cfg.hidden_size

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(plan, 1)  # final_layer_norm reads the last layer's sum

    def forward(self, op, text):
        kernel = encoder_attention(op, self.ep, text.attention_mask, self.dtype, causal=self.causal)
        hidden = self.encoder(op, self.embeddings(op, text.input_ids), kernel)
        hidden = self.final_layer_norm(op, hidden)
        return hidden, self.pool(op, hidden, text.input_ids)

    def pool(self, op, hidden, input_ids):
        eos = self.cfg.eos_token_id
        if self.legacy_eos and eos == LEGACY_EOS:
            scores = op.Cast(input_ids, to=ir.DataType.INT32)
        else:
            scores = op.Cast(op.Equal(input_ids, eos), to=ir.DataType.INT32)
        index = op.ArgMax(scores, axis=-1, keepdims=1)  # the first maximum, as torch's
        return op.GatherND(hidden, index, batch_dims=1)


class PatchConv(nn.Module):
    """Conv2d with kernel and stride `patch` (CLIP: no bias), flattened to [batch, patches,
    hidden]."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType, bias: bool):
        super().__init__()
        patch = cfg.patch_size
        self.weight = nn.Parameter([cfg.hidden_size, cfg.num_channels, patch, patch], dtype)
        self.bias = nn.Parameter([cfg.hidden_size], dtype) if bias else None
        self.patch, self.hidden = patch, cfg.hidden_size

    def forward(self, op, pixels):
        patch = [self.patch, self.patch]
        x = op.Conv(pixels, self.weight, self.bias, kernel_shape=patch, strides=patch)
        return op.Transpose(op.Reshape(x, [0, self.hidden, -1]), perm=[0, 2, 1])


class ClipVisionEmbeddings(nn.Module):
    """class_embedding, then the patches, plus position_embedding."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType):
        super().__init__()
        self.class_embedding = nn.Parameter([cfg.hidden_size], dtype)
        self.patch_embedding = PatchConv(cfg, dtype, bias=False)
        self.tokens = (cfg.image_size // cfg.patch_size) ** 2 + 1
        self.position_embedding = Table(self.tokens, cfg.hidden_size, dtype)
        self.hidden = cfg.hidden_size

    def forward(self, op, pixels):
        patches = self.patch_embedding(op, pixels)
        batch = op.Shape(pixels, start=0, end=1)
        first = op.Reshape(self.class_embedding, [1, 1, self.hidden])
        first = op.Expand(first, op.Concat(batch, [1, self.hidden], axis=0))
        x = op.Concat(first, patches, axis=1)
        return op.Add(x, self.positions(op, pixels))

    def positions(self, op, pixels):
        """[1, tokens, hidden]: the position of each token of the images."""
        return op.Unsqueeze(self.position_embedding(op, op.Range(0, self.tokens, 1)), [0])


class ClipVisionTransformer(nn.Module):
    """Embeddings, pre_layrnorm (the checkpoints' spelling), the stack; the class token's
    final state through post_layernorm is the pooled output (`pooled` False: none)."""

    def __init__(self, cfg: VisionTower, dtype: ir.DataType, ep, layers_name="layers", pooled=True):
        super().__init__()
        self.embeddings = ClipVisionEmbeddings(cfg, dtype)
        self.pre_layrnorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.encoder = TowerEncoder(cfg, dtype, layers_name)
        self.post_layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype
        self.width, self.tokens = cfg.hidden_size, self.embeddings.tokens

    def expected_fusions(self, plan) -> dict[str, int]:
        # pre_layrnorm reads the embeddings' sum; the first layer's norm reads pre_layrnorm
        return skip_norms(plan, 0)

    def forward(self, op, image):
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        x = self.pre_layrnorm(op, self.embeddings(op, image.pixel_values))
        hidden = self.encoder(op, x, kernel)
        if self.post_layernorm is None:
            return hidden, None
        first = op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
        return hidden, self.post_layernorm(op, first)


class ClipModel(TwoTowerModel):
    text_cls = ClipTextTransformer
    vision_cls = ClipVisionTransformer
    heads = (ZERO_SHOT, IMAGE_CLASSIFICATION)
    first_token = 1  # the classifier averages the patches, not the class token


class MetaClip2TextTransformer(ClipTextTransformer):
    legacy_eos = False


class MetaClip2Model(ClipModel):
    text_cls = MetaClip2TextTransformer


# buffers older checkpoints carry; the post-norm of the pooled class token, which
# CLIPForImageClassification computes and drops
CLIP_UNUSED = (
    r"(text|vision)_model\.embeddings\.position_ids",
    r"vision_model\.post_layernorm\.(weight|bias)",
)

FAMILIES = [
    Family(
        "clip",
        ClipModel,
        "two towers: a causal text encoder pooled at its EOS token and a ViT, projected into "
        "one space (onnx/model.onnx, text_model.onnx, vision_model.onnx)",
        ("openai/clip-vit-base-patch32", "laion/CLIP-ViT-B-32-laion2B-s34B-b79K"),
        rules=TwoTowerRules("clip_text_model", "clip_vision_model"),
        task="zero-shot-image-classification",
        category="multimodal",
        unused=CLIP_UNUSED,
    ),
    Family(
        "metaclip_2",
        MetaClip2Model,
        "CLIP trained on worldwide data: its text is always pooled at the EOS id",
        ("facebook/metaclip-2-worldwide-huge-quickgelu",),
        rules=TwoTowerRules("metaclip_2_text_model", "metaclip_2_vision_model"),
        task="zero-shot-image-classification",
        category="multimodal",
        unused=CLIP_UNUSED,
    ),
]

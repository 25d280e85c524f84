"""DINOv2 (and DINOv2 with registers): ViT layers with per-channel layer scales, an optional
SwiGLU MLP, and positions resized (bicubic) to whatever grid the image gives, so the graph takes
any height and width (the released configs say 518 while the processor crops 224). The
registers variant inserts its register tokens after the cls token, once positions are added.

Both resize the position grid on every call (an identity at the configured grid). transformers
skips the resize only when the patch count equals the table's and the image is square; a
non-square image with exactly that many patches would get the table unresized there and resized
here."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.config.vision import MAX_IMAGE_SIDE, VisionRules, pair
from converter.models.vision import VisionEncoderModel, batch_of, first_token
from converter.models.vision_transformer import ViTAttention, ViTBody, ViTEmbeddings, ViTEncoder
from converter.registry import Family
from converter.tasks.encoding import SEQUENCE
from converter.tasks.image_encoding import HEIGHT, WIDTH


class Dinov2Rules(VisionRules):
    """`mlp_ratio` sets the MLP width; `use_swiglu_ffn` a SwiGLU MLP of its own width."""

    eps_default = 1e-6

    def intermediate_size(self, r, hidden):
        inner = int(hidden * r.float("mlp_ratio", default=4.0))
        if r.bool("use_swiglu_ffn", False):
            return (int(inner * 2 / 3) + 7) // 8 * 8
        return inner

    def read_extra(self, r):
        image, patch = pair(r, "image_size", MAX_IMAGE_SIDE), pair(r, "patch_size", MAX_IMAGE_SIDE)
        if image[0] // patch[0] != image[1] // patch[1]:
            r.refuse(
                "image_size",
                "the position table must be a square grid (transformers resizes it as one)",
            )
        return {
            "swiglu": r.bool("use_swiglu_ffn", False),
            "registers": r.int("num_register_tokens", default=0, lo=0, hi=1024),
        }


class Dinov2Embeddings(ViTEmbeddings):
    """cls token and patches plus the position table resized (bicubic, as transformers: in
    float32, a = -0.75 without antialiasing; registers variant: antialiased, a = -0.5) to the
    image's patch grid."""

    antialias = False

    def __init__(self, cfg, dtype):
        super().__init__(cfg, dtype)
        self.side, self.patch, self.dtype = cfg.grid[0], cfg.patch_size, dtype
        registers = cfg.extra["registers"]
        self.register_tokens = nn.Parameter([1, registers, self.size], dtype) if registers else None

    def positions(self, op, pixel_values):
        table = self.position_embeddings
        cls_position = op.Slice(table, [0], [1], [1])
        grid = op.Reshape(op.Slice(table, [1], [2**62], [1]), [1, self.side, self.side, self.size])
        grid = op.Cast(op.Transpose(grid, perm=[0, 3, 1, 2]), to=ir.DataType.FLOAT)
        rows_columns = op.Div(op.Shape(pixel_values, start=2, end=4), list(self.patch))
        sizes = op.Concat([1, self.size], rows_columns, axis=0)
        aa = {"antialias": 1, "cubic_coeff_a": -0.5, "exclude_outside": 1}
        resized = op.Resize(
            grid,
            None,
            None,
            sizes,
            mode="cubic",
            coordinate_transformation_mode="half_pixel",
            **(aa if self.antialias else {"cubic_coeff_a": -0.75}),
        )
        resized = op.Cast(resized, to=self.dtype)
        patches = op.Reshape(op.Transpose(resized, perm=[0, 2, 3, 1]), [1, -1, self.size])
        return op.Concat(cls_position, patches, axis=1)

    def forward(self, op, pixel_values):
        x = super().forward(op, pixel_values)
        if self.register_tokens is None:
            return x
        count = self.register_tokens.shape[1]
        shape = op.Concat(batch_of(op, pixel_values), [count, self.size], axis=0)
        registers = op.Expand(self.register_tokens, shape)
        rest = op.Slice(x, [1], [2**62], [1])
        return op.Concat(op.Slice(x, [0], [1], [1]), registers, rest, axis=1)


class RegistersEmbeddings(Dinov2Embeddings):
    antialias = True


class LayerScale(nn.Module):
    """x * lambda1, per channel."""

    def __init__(self, size: int, dtype: ir.DataType):
        super().__init__()
        self.lambda1 = nn.Parameter([size], dtype)

    def forward(self, op, x):
        return op.Mul(x, self.lambda1)


class Dinov2MLP(nn.Module):
    """fc1, activation, fc2."""

    def __init__(self, cfg, dtype):
        super().__init__()
        size, inner = cfg.hidden_size, cfg.intermediate_sizes[0]
        self.fc1 = Linear(size, inner, True, dtype)
        self.fc2 = Linear(inner, size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.fc2(op, activation(op, self.act, self.fc1(op, x)))


class SwiGLU(nn.Module):
    """weights_out(silu(gate) * up), gate and up the two halves of `weights_in`'s rows (the
    released checkpoints' fused layout)."""

    def __init__(self, cfg, dtype):
        super().__init__()
        size, inner = cfg.hidden_size, cfg.intermediate_sizes[0]
        self.weights_in = Linear(size, 2 * inner, True, dtype)
        self.weights_out = Linear(inner, size, True, dtype)

    def forward(self, op, x):
        gate, up = op.Split(self.weights_in(op, x), axis=-1, num_outputs=2, _outputs=2)
        return self.weights_out(op, op.Mul(activation(op, "silu", gate), up))


class Dinov2Layer(nn.Module):
    """Pre-norm: x + layer_scale1(attention(norm1(x))), then x + layer_scale2(mlp(norm2(x)))."""

    def __init__(self, cfg, dtype):
        super().__init__()
        size = cfg.hidden_size
        self.norm1 = LayerNorm(size, cfg.norm_eps, dtype)
        self.attention = ViTAttention(cfg, dtype)
        self.layer_scale1 = LayerScale(size, dtype)
        self.norm2 = LayerNorm(size, cfg.norm_eps, dtype)
        self.mlp = (SwiGLU if cfg.extra["swiglu"] else Dinov2MLP)(cfg, dtype)
        self.layer_scale2 = LayerScale(size, dtype)

    def forward(self, op, x, kernel, bias=None):
        attended = self.attention(op, self.norm1(op, x), kernel, bias)
        x = op.Add(x, self.layer_scale1(op, attended))
        return op.Add(x, self.layer_scale2(op, self.mlp(op, self.norm2(op, x))))


class Dinov2Encoder(ViTEncoder):
    layer_cls = Dinov2Layer


class Dinov2Body(ViTBody):
    """Dinov2Model: its pooler_output is the normed cls token (no weights)."""

    embeddings_cls = Dinov2Embeddings
    encoder_cls = Dinov2Encoder

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled=False)

    def expected_fusions(self, plan):
        fused = super().expected_fusions(plan)
        if fused["skip_norms"] and self.embeddings.register_tokens is None:
            fused["skip_norms"] += 1  # tokens + resized positions feed the first norm1
        return fused

    def image_dims(self):
        return HEIGHT, WIDTH

    def token_count(self):
        return SEQUENCE

    def pool(self, op, hidden):
        return first_token(op, hidden), self.cfg.hidden_size


class RegistersBody(Dinov2Body):
    embeddings_cls = RegistersEmbeddings


class Dinov2ImageModel(VisionEncoderModel):
    """The classifier reads the cls token beside the mean of the patch tokens."""

    body_cls = Dinov2Body
    body_name = "dinov2"

    def make_classifier(self, cfg, dtype, tensors):
        self.classifier = Linear(2 * cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features):
        hidden = features.hidden
        first_patch = 1 + self.cfg.extra["registers"]
        patches = op.ReduceMean(op.Slice(hidden, [first_patch], [2**62], [1]), [1], keepdims=0)
        return self.classifier(op, op.Concat(first_token(op, hidden), patches, axis=-1))


class RegistersImageModel(Dinov2ImageModel):
    body_cls = RegistersBody
    body_name = "dinov2_with_registers"


FAMILIES = [
    Family(
        "dinov2",
        Dinov2ImageModel,
        "ViT with layer scales, optional SwiGLU MLP, positions resized to any image size",
        ("facebook/dinov2-small", "facebook/dinov2-base"),
        rules=Dinov2Rules(),
        task="image-feature-extraction",
        category="vision",
        unused=(r"(dinov2\.)?embeddings\.mask_token",),
        prefix="dinov2.",
    ),
    Family(
        "dinov2_with_registers",
        RegistersImageModel,
        "DINOv2 with register tokens after the cls token, antialiased position resizing",
        ("facebook/dinov2-with-registers-small", "facebook/dinov2-with-registers-base"),
        rules=Dinov2Rules(),
        task="image-feature-extraction",
        category="vision",
        unused=(r"(dinov2_with_registers\.)?embeddings\.mask_token",),
        prefix="dinov2_with_registers.",
    ),
]

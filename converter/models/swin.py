"""Swin: a patch Conv and stages of pre-norm blocks attending within windows (every other block
on windows shifted by half a window, with the mask that keeps regions the roll brought together
apart), a relative-position bias per block, patch merging (2x2 neighbours concatenated, normed,
projected) between stages; the pooler is the mean token after the final LayerNorm.

Windows, shifts and masks are computed for the configured image size, so the size is fixed. As
in transformers, a stage whose map is no larger than a window gets one unshifted window; one
smaller than a window is refused (the bias table would not fit, transformers fails too)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv2d import Conv2d
from converter.components.encoder_attention import encoder_attention
from converter.components.windows import Windows, relative_position_index
from converter.config.vision import MAX_IMAGE_SIDE, VisionRules, int_list, same_length
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.vision import Dense, Features, VisionEncoderModel, batch_of
from converter.registry import Family
from converter.tasks.encoding import BATCH

PLAIN_EPS = 1e-5  # torch's LayerNorm default, which the embedding and merging norms keep
MASKED = -100.0  # what transformers adds between regions of a shifted window


class SwinRules(VisionRules):
    """`embed_dim` doubling per stage, `depths`, `num_heads`, `mlp_ratio`, `window_size`."""

    eps_default = 1e-5

    def stages(self, r):
        embed, depths, heads = r.int("embed_dim"), int_list(r, "depths"), int_list(r, "num_heads")
        same_length(depths=depths, num_heads=heads)
        widths = tuple(embed * 2**i for i in range(len(depths)))
        for stage, (width, count) in enumerate(zip(widths, heads, strict=True)):
            if width % count:
                raise ConfigError(f"stage {stage}: width {width} is not divisible by {count} heads")
        ratio = r.float("mlp_ratio", default=4.0)
        return widths, depths, heads, tuple(int(ratio * w) for w in widths)

    def read_extra(self, r):
        return {
            "window_size": r.int("window_size", hi=MAX_IMAGE_SIDE),
            "absolute_positions": r.bool("use_absolute_embeddings", False),
        }


def stage_maps(cfg) -> list[tuple[int, int]]:
    """Each stage's feature map at run time: the patch grid of the image padded to whole
    patches, halved (rounding up) by each merging."""
    (h, w), (ph, pw) = cfg.image_size, cfg.patch_size
    maps = [(-(-h // ph), -(-w // pw))]
    for _ in cfg.depths[1:]:
        rows, columns = maps[-1]
        maps.append(((rows + 1) // 2, (columns + 1) // 2))
    return maps


class SwinPatchEmbeddings(nn.Module):
    """`projection` over the image padded at the bottom and right to whole patches."""

    def __init__(self, cfg, dtype):
        super().__init__()
        patch = cfg.patch_size
        self.projection = Conv2d(cfg.num_channels, cfg.widths[0], patch, dtype, stride=patch)
        (h, w), (ph, pw) = cfg.image_size, patch
        self.pads = [0, 0, 0, 0, 0, 0, (ph - h % ph) % ph, (pw - w % pw) % pw]

    def forward(self, op, pixel_values):
        if any(self.pads):
            pixel_values = op.Pad(pixel_values, self.pads)
        maps = self.projection(op, pixel_values)
        return op.Transpose(op.Reshape(maps, [0, 0, -1]), perm=[0, 2, 1])


class SwinEmbeddings(nn.Module):
    """Patches, `norm` (torch's default eps), then the optional absolute positions."""

    def __init__(self, cfg, dtype):
        super().__init__()
        self.patch_embeddings = SwinPatchEmbeddings(cfg, dtype)
        self.norm = LayerNorm(cfg.widths[0], PLAIN_EPS, dtype)
        rows, columns = stage_maps(cfg)[0]
        if cfg.extra["absolute_positions"] and (rows, columns) != cfg.grid:
            raise ConfigError("'use_absolute_embeddings' needs an image size of whole patches")
        positioned = cfg.extra["absolute_positions"]
        shape = [1, rows * columns, cfg.widths[0]]
        self.position_embeddings = nn.Parameter(shape, dtype) if positioned else None

    def forward(self, op, pixel_values):
        x = self.norm(op, self.patch_embeddings(op, pixel_values))
        return x if self.position_embeddings is None else op.Add(x, self.position_embeddings)


class SwinSelfAttention(nn.Module):
    """query, key, value and the block's `relative_position_bias_table`, attending within
    windows; the bias adds the shifted-window mask."""

    masked = MASKED  # what the shifted-window mask adds between regions

    def __init__(self, cfg, dtype, stage: int, windows: Windows):
        super().__init__()
        width, heads = cfg.widths[stage], cfg.heads[stage]
        q, k, v = self.biases(cfg)
        self.query = Linear(width, width, q, dtype)
        self.key = Linear(width, width, k, dtype)
        self.value = Linear(width, width, v, dtype)
        self.heads, self.windows, self.dtype = heads, windows, dtype
        self.scale = (width // heads) ** -0.5
        self.make_position_bias(cfg, dtype, stage)

    def biases(self, cfg) -> tuple[bool, bool, bool]:
        return (cfg.qkv_bias,) * 3

    def make_position_bias(self, cfg, dtype, stage: int) -> None:
        side = cfg.extra["window_size"]
        self.relative_position_bias_table = nn.Parameter([(2 * side - 1) ** 2, self.heads], dtype)
        self.index = relative_position_index(side, side)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def position_bias(self, op):
        """[1, heads, tokens, tokens]."""
        return self.gathered(op, self.relative_position_bias_table)

    def gathered(self, op, table):
        """[1, heads, tokens, tokens] from a [offsets, heads] table."""
        tokens = self.windows.tokens
        bias = op.Gather(table, op.Constant(value=ir.tensor(self.index)))
        bias = op.Transpose(op.Reshape(bias, [tokens, tokens, -1]), perm=[2, 0, 1])
        return op.Unsqueeze(bias, [0])

    def bias(self, op, batch):
        """The position bias plus the shift mask, one [heads, tokens, tokens] slice per window of
        every image: [batch * windows, heads, tokens, tokens] (or [1, ...] without a mask)."""
        bias = self.position_bias(op)
        mask = self.windows.mask(self.masked)
        if mask is None:
            return bias
        mask = op.Constant(value=ir.tensor(mask.astype(self.dtype.numpy())))
        per_window = op.Unsqueeze(op.Add(bias, mask), [0])  # [1, windows, heads, t, t]
        count, tokens = self.windows.count, self.windows.tokens
        shape = op.Concat(batch, [count, self.heads, tokens, tokens], axis=0)
        return op.Reshape(op.Expand(per_window, shape), [-1, self.heads, tokens, tokens])

    def attend(self, op, q, k, v, kernel, batch):
        return kernel(op, q, k, v, self.heads, self.scale, self.bias(op, batch))

    def forward(self, op, windows, kernel, batch):
        q, k, v = self.query(op, windows), self.key(op, windows), self.value(op, windows)
        return self.attend(op, q, k, v, kernel, batch)


class SwinAttention(nn.Module):
    self_attention_cls = SwinSelfAttention

    def __init__(self, cfg, dtype, stage: int, windows: Windows):
        super().__init__()
        attention = self.self_attention_cls(cfg, dtype, stage, windows)
        setattr(self, "self", attention)  # noqa: B010 (the checkpoint's name)
        width = cfg.widths[stage]
        self.output = Dense(width, width, dtype)

    def forward(self, op, windows, kernel, batch):
        return self.output(op, self.self(op, windows, kernel, batch))


def block_windows(cfg, stage: int, block: int, rows: int, columns: int) -> Windows:
    """Swin's windows for a block on a rows x columns map: shifted on odd blocks; one unshifted
    window when the map is no larger than a window."""
    side = cfg.extra["window_size"]
    shift = side // 2 if block % 2 else 0
    if min(rows, columns) <= side:
        if min(rows, columns) < side:
            raise ConfigError(
                f"stage {stage}'s {rows}x{columns} map is smaller than 'window_size' = {side}: its "
                "relative-position table cannot apply (transformers fails on it too)"
            )
        shift = 0
    return Windows(rows, columns, side, shift)


class SwinLayer(nn.Module):
    """Pre-norm block: x + attention over (shifted) windows of layernorm_before(x), then
    x + MLP(layernorm_after(x)), the MLP being `intermediate.dense`, the activation and
    `output.dense`."""

    attention_cls = SwinAttention

    def __init__(self, cfg, dtype, stage: int, block: int, rows: int, columns: int):
        super().__init__()
        width = cfg.widths[stage]
        self.windows = self.make_windows(cfg, stage, block, rows, columns)
        self.layernorm_before = LayerNorm(width, cfg.norm_eps, dtype)
        self.attention = self.attention_cls(cfg, dtype, stage, self.windows)
        self.layernorm_after = LayerNorm(width, cfg.norm_eps, dtype)
        self.intermediate = Dense(width, cfg.intermediate_sizes[stage], dtype)
        self.output = Dense(cfg.intermediate_sizes[stage], width, dtype)
        self.act, self.width = cfg.activation, width

    def make_windows(self, cfg, stage, block, rows, columns) -> Windows:
        return block_windows(cfg, stage, block, rows, columns)

    def mlp(self, op, x):
        return self.output(op, activation(op, self.act, self.intermediate(op, x)))

    def attend(self, op, x, kernel, batch):
        windows = self.windows.split(op, x, self.width)
        return self.windows.join(op, self.attention(op, windows, kernel, batch), self.width)

    def forward(self, op, x, kernel, batch):
        x = op.Add(x, self.attend(op, self.layernorm_before(op, x), kernel, batch))
        return op.Add(x, self.mlp(op, self.layernorm_after(op, x)))


class SwinPatchMerging(nn.Module):
    """Each 2x2 neighbourhood (the map padded to even sides) concatenated as [top-left,
    bottom-left, top-right, bottom-right], then `norm` and `reduction` to twice the width."""

    norm_width = 4  # the norm's width, in stage widths

    def __init__(self, width: int, rows: int, columns: int, dtype):
        super().__init__()
        self.norm = LayerNorm(self.norm_width * width, PLAIN_EPS, dtype)
        self.reduction = Linear(4 * width, 2 * width, False, dtype)
        self.width, self.rows, self.columns = width, rows, columns

    def gather(self, op, x):
        """[batch, rows * columns, width] -> [batch, rows/2 * columns/2, 4 * width]."""
        rows, columns = self.rows + self.rows % 2, self.columns + self.columns % 2
        x = op.Reshape(x, [-1, self.rows, self.columns, self.width])
        if (rows, columns) != (self.rows, self.columns):
            x = op.Pad(x, [0, 0, 0, 0, 0, rows - self.rows, columns - self.columns, 0])
        parts = [
            op.Slice(x, [r, c], [rows, columns], [1, 2], [2, 2]) for c in range(2) for r in range(2)
        ]
        return op.Reshape(op.Concat(*parts, axis=-1), [0, -1, 4 * self.width])

    def forward(self, op, x):
        return self.reduction(op, self.norm(op, self.gather(op, x)))


class SwinStage(nn.Module):
    layer_cls = SwinLayer
    merging_cls = SwinPatchMerging

    def __init__(self, cfg, dtype, stage: int, rows: int, columns: int):
        super().__init__()
        depth = cfg.depths[stage]
        self.blocks = nn.ModuleList(
            [self.layer_cls(cfg, dtype, stage, i, rows, columns) for i in range(depth)]
        )
        last = stage == len(cfg.depths) - 1
        width = cfg.widths[stage]
        self.downsample = None if last else self.merging_cls(width, rows, columns, dtype)

    def forward(self, op, x, kernel, batch):
        for block in self.blocks:
            x = block(op, x, kernel, batch)
        return x if self.downsample is None else self.downsample(op, x)


class SwinEncoder(nn.Module):
    stage_cls = SwinStage

    def __init__(self, cfg, dtype):
        super().__init__()
        maps = stage_maps(cfg)
        self.layers = nn.ModuleList(
            [self.stage_cls(cfg, dtype, i, *maps[i]) for i in range(len(cfg.depths))]
        )

    def forward(self, op, x, kernel, batch):
        for stage in self.layers:
            x = stage(op, x, kernel, batch)
        return x


class SwinBody(nn.Module):
    """SwinModel: embeddings, the stages, the final `layernorm`; its pooler (no weights) is the
    mean token."""

    embeddings_cls = SwinEmbeddings
    encoder_cls = SwinEncoder

    final_norm = True  # Donut's Swin has none

    def __init__(self, cfg, dtype, ep, pooled):
        super().__init__()
        self.embeddings = self.embeddings_cls(cfg, dtype)
        self.encoder = self.encoder_cls(cfg, dtype)
        norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype) if self.final_norm else None
        self.layernorm = norm
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # in each block the attention sum feeds layernorm_after and the MLP sum the next block's
        # layernorm_before, except the last block of a stage before patch merging; the last
        # stage's feeds the final layernorm
        fused = 2 * self.cfg.num_hidden_layers - len(self.cfg.depths) + self.final_norm
        return {"skip_norms": fused if plan.has(SKIP_NORM) else 0}

    def image_dims(self):
        return self.cfg.image_size

    def forward(self, op, pixel_values) -> Features:
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        batch = batch_of(op, pixel_values)
        hidden = self.encoder(op, self.embeddings(op, pixel_values), kernel, batch)
        if self.layernorm is not None:
            hidden = self.layernorm(op, hidden)
        rows, columns = stage_maps(self.cfg)[-1]
        size = self.cfg.hidden_size
        pooled = op.ReduceMean(hidden, [1], keepdims=0)
        return Features(hidden, [BATCH, rows * columns, size], pooled, [BATCH, size])


class SwinImageModel(VisionEncoderModel):
    body_cls = SwinBody
    body_name = "swin"


class DonutSwinBody(SwinBody):
    final_norm = False


class DonutSwinImageModel(SwinImageModel):
    """Donut's Swin: no final LayerNorm."""

    body_cls = DonutSwinBody
    body_name = "donut"


def swin_family(model_type, model_class, notes, examples, rules) -> Family:
    name = model_class.body_name
    return Family(
        model_type,
        model_class,
        notes,
        examples,
        rules=rules,
        task="image-feature-extraction",
        category="vision",
        # the masked-image-modeling mask token and decoder, and buffers older checkpoints carry
        unused=(
            rf"({name}\.)?embeddings\.mask_token",
            r"decoder\..*",
            r".*relative_position_index",
            r".*relative_coords_table",
        ),
        prefix=f"{name}.",
    )


FAMILIES = [
    swin_family(
        "swin",
        SwinImageModel,
        "shifted-window attention with relative-position biases, patch merging between stages",
        ("microsoft/swin-tiny-patch4-window7-224",),
        SwinRules(),
    ),
    swin_family(
        "donut-swin",
        DonutSwinImageModel,
        "Swin without the final LayerNorm (Donut's image encoder)",
        ("naver-clova-ix/donut-base",),
        SwinRules(),
    ),
]

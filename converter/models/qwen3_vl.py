"""Qwen3-VL: Qwen-VL's patch tower (converter/models/qwen_vl.py) with a learned position grid and
DeepStack, into Qwen3 with interleaved multimodal (3-D) rope.

The tower adds to each patch its position embedding: the learned square grid
(num_position_embeddings = side²) resampled bilinearly (corners aligned) to the patch's image
grid, computed in the graph from image_grid_thw. Blocks use LayerNorm and a linear_fc1/fc2 MLP
and attend within their frame. After each block of `deepstack_visual_indexes` a merger of its
own (normalized after the merge-block shuffle) projects the hidden states: DeepStack features,
which transformers adds to the decoder's hidden states at the image tokens after its first
layers (feature k after layer k).

onnxruntime-genai (0.18) carries one tensor from the vision graph to the embedding graph
(image_features) and one from the embedding graph to the decoder (inputs_embeds), both
`decoder.hidden_size` wide. So the DeepStack features travel packed beside the image features:
image_features [tokens, hidden x (1 + K)] is the merger's output then the K DeepStack features;
the embedding graph pads each token row with zeros to that width before placing the image rows;
the decoder reads the first `hidden` columns as its embeddings and adds column block k + 1 after
layer k (zeros away from the image tokens). genai_config declares that packed width as the
decoder's hidden_size.
"""

from __future__ import annotations

import math
from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, PlainMLP, activation
from converter.components.encoder_attention import BlockAttention
from converter.config.reader import MAX_DIM, ConfigReader
from converter.config.vision import int_list
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLM
from converter.models.qwen_vl import (
    FLOAT,
    INT64,
    NORM_EPS,
    QWEN_VL_RENAMES,
    PatchEmbed,
    PatchGrid,
    QwenVisionConfig,
    QwenVlModel,
    QwenVlRules,
    VisionBlock,
    axial_rotary,
    patch_grid,
    read_patch_fields,
    same,
)
from converter.models.vision_language import Holder, merge_image_features
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class Qwen3VlRules(QwenVlRules):
    text_type = "qwen3_vl_text"
    text_family = "qwen3"
    vision_type = "qwen3_vl_vision"

    def read(self, r: ConfigReader):
        cfg = super().read(r)
        # transformers 5 ties the head by the top-level setting alone, whatever the text
        # section says (Qwen3-VL-MoE's text section defaults to tied, the top level not)
        tied = r.bool("tie_word_embeddings", False)
        return replace(cfg, text=replace(cfg.text, tie_word_embeddings=tied))

    def read_text(self, raw, text_type):
        return interleaved(super().read_text(raw, text_type))

    def read_vision(self, r: ConfigReader) -> QwenVisionConfig:
        fields = read_patch_fields(r, r.int("hidden_size"))
        positions = r.int("num_position_embeddings", hi=1 << 20)
        if math.isqrt(positions) ** 2 != positions:
            raise ConfigError(
                f"'num_position_embeddings' = {positions} is not a square grid's size"
            )
        deepstack = (
            int_list(r, "deepstack_visual_indexes", hi=fields["depth"] - 1, lo=0)
            if r.get("deepstack_visual_indexes")
            else ()
        )
        return QwenVisionConfig(
            **fields,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            out_hidden_size=r.int("out_hidden_size"),
            num_position_embeddings=positions,
            deepstack_visual_indexes=deepstack,
        )

    def read_extra(self, r: ConfigReader, text, vision: QwenVisionConfig) -> dict:
        if text.layer_ropes is not None:
            raise ConfigError("text_config: layers with ropes of their own are not supported")
        return super().read_extra(r, text, vision)


def interleaved(text):
    """`text` with its multimodal rope interleaved: transformers' Qwen3-VL text rope always
    interleaves, whatever the config says."""
    if text.rope is None or text.layer_ropes is not None:
        return text  # refused by read_extra (no mrope_section, ropes of its own)
    return replace(text, rope=replace(text.rope, mrope_interleaved=True))


class VisionMlp(PlainMLP):
    in_name, out_name = "linear_fc1", "linear_fc2"


class PositionGrid(nn.Module):
    """The learned side x side position table, resampled bilinearly with aligned corners to
    each patch's image grid: the 4 nearest table rows, weighted."""

    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([cfg.num_position_embeddings, cfg.hidden_size], dtype)
        self.side, self.dtype = math.isqrt(cfg.num_position_embeddings), dtype

    def _taps(self, op, position, size):
        """The two table indices along one axis and their weights ([patches] each)."""
        last = self.side - 1
        span = op.Cast(op.Max(op.Sub(size, 1), op.Constant(value_int=1)), to=FLOAT)
        source = op.Div(op.Mul(op.Cast(position, to=FLOAT), float(last)), span)
        floor = op.Floor(source)
        low = op.Cast(floor, to=INT64)
        taps = [
            op.Clip(op.Add(low, offset), op.Constant(value_int=0), op.Constant(value_int=last))
            for offset in (0, 1)
        ]
        fraction = op.Sub(source, floor)
        weights = [
            op.Max(
                op.Sub(1.0, op.Abs(op.Sub(fraction, float(offset)))), op.Constant(value_float=0.0)
            )
            for offset in (0, 1)
        ]
        return taps, weights

    def forward(self, op, places: PatchGrid):
        rows, row_weights = self._taps(op, places.row, places.height)
        cols, col_weights = self._taps(op, places.col, places.width)
        total = None
        for row, row_weight in zip(rows, row_weights, strict=True):
            for col, col_weight in zip(cols, col_weights, strict=True):
                weight = op.Unsqueeze(op.Mul(row_weight, col_weight), [1])
                if self.dtype != FLOAT:
                    weight = op.Cast(weight, to=self.dtype)
                index = op.Add(op.Mul(row, self.side), col)
                term = op.Mul(op.Gather(self.weight, index, axis=0), weight)
                total = term if total is None else op.Add(total, term)
        return total


class PatchMerger(nn.Module):
    """LayerNorm over each patch (or, `shuffled`, over each merge block's concatenated
    patches), then Linear, GELU, Linear on the merge block."""

    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType, shuffled: bool):
        super().__init__()
        self.width = cfg.hidden_size * cfg.spatial_merge_size**2
        self.norm = LayerNorm(self.width if shuffled else cfg.hidden_size, NORM_EPS, dtype)
        self.linear_fc1 = Linear(self.width, self.width, True, dtype)
        self.linear_fc2 = Linear(self.width, cfg.out_hidden_size, True, dtype)
        self.shuffled = shuffled

    def forward(self, op, x):
        if self.shuffled:
            x = self.norm(op, op.Reshape(x, [-1, self.width]))
        else:
            x = op.Reshape(self.norm(op, x), [-1, self.width])
        return self.linear_fc2(op, activation(op, "gelu", self.linear_fc1(op, x)))


class Qwen3VisionTransformer(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.patch_embed = Holder("proj", PatchEmbed(cfg, dtype, bias=True))
        self.pos_embed = PositionGrid(cfg, dtype)
        self.blocks = nn.ModuleList(
            [VisionBlock(cfg, dtype, LayerNorm, VisionMlp(cfg, dtype)) for _ in range(cfg.depth)]
        )
        self.merger = PatchMerger(cfg, dtype, shuffled=False)
        self.deepstack_merger_list = nn.ModuleList(
            [PatchMerger(cfg, dtype, shuffled=True) for _ in cfg.deepstack_visual_indexes]
        )
        self.cfg, self.dtype, self.ep = cfg, dtype, ep

    def forward(self, op, pixels, grid):
        cfg = self.cfg
        places = patch_grid(op, grid, pixels, cfg.spatial_merge_size)
        x = op.Add(self.patch_embed(op, pixels), self.pos_embed(op, places))
        rotary = axial_rotary(op, places, cfg.head_dim, cfg.rope_theta)
        frame = BlockAttention(op, self.ep, same(op, places.image, places.frame), self.dtype)
        stack = []
        for i, block in enumerate(self.blocks):
            x = block(op, x, rotary, frame)
            if i in cfg.deepstack_visual_indexes:
                merger = self.deepstack_merger_list[cfg.deepstack_visual_indexes.index(i)]
                stack.append(merger(op, x))
        return op.Concat(self.merger(op, x), *stack, axis=-1)


class DeepStackBody(DecoderBody):
    """Reads inputs_embeds packed as [embeddings | feature 0 | ... | feature K-1] and adds
    feature k to the hidden states after layer k."""

    levels = 0  # set by DeepStackLM

    def forward(self, op, inputs):
        parts = op.Split(
            inputs.tokens, num_outputs=self.levels + 1, axis=-1, _outputs=self.levels + 1
        )
        self.stack = parts[1:]
        return super().forward(op, replace(inputs, tokens=parts[0]))

    def after_layer(self, op, index: int, x):
        return op.Add(x, self.stack[index]) if index < len(self.stack) else x


class DeepStackLM(DecoderLM):
    """The text family's decoder (Qwen3's; `body_cls` a DeepStackBody of its layers)."""

    body_cls = DeepStackBody

    def __init__(self, cfg, dtype, ep, levels: int):
        super().__init__(cfg, dtype, ep)
        self.body.levels = levels


class Qwen3VlModel(QwenVlModel):
    def make_vision(self, cfg, dtype, ep) -> None:
        self.visual = Qwen3VisionTransformer(cfg.vision, dtype, ep)

    decoder_cls = DeepStackLM

    def make_decoder(self, text, dtype, ep) -> nn.Module:
        levels = len(self.cfg.vision.deepstack_visual_indexes)
        return self.decoder_cls(text, dtype, ep, levels)

    @property
    def features_width(self) -> int:
        return self.cfg.text.hidden_size * (1 + len(self.cfg.vision.deepstack_visual_indexes))

    @classmethod
    def genai_fields(cls, cfg, section: str) -> dict:
        if section == "decoder":  # the packed width genai allocates inputs_embeds with
            levels = len(cfg.vision.deepstack_visual_indexes)
            return {"hidden_size": cfg.text.hidden_size * (1 + levels)}
        return super().genai_fields(cfg, section)

    def embed(self, op, input_ids, image_features):
        embeds = self.language_model(op, input_ids)
        extra = self.features_width - self.cfg.text.hidden_size
        if extra:
            embeds = op.Pad(embeds, op.Constant(value_ints=[0, 0, 0, 0, 0, extra]))
        return merge_image_features(op, embeds, input_ids, image_features, self.cfg.image_token_id)


# Cosmos3-Omni's unified checkpoints also carry a generator (diffusion) tower and sound and
# action towers, which transformers' reasoner (Qwen3-VL) leaves unread
COSMOS3_OTHER_TOWERS = (
    r".*\.(add_[qkv]_proj|to_add_out|norm_added_[qk])\..*",
    r".*moe_gen.*",
    r"(proj_out|proj_in|time_embedder|audio_proj_out|audio_proj_in|action_proj_out"
    r"|action_proj_in)\..*",
    r"(audio|action)_modality_embed",
)

# ... and keep the reasoner's text model and tower unprefixed, some with diffusers' names
COSMOS3_RENAMES = (
    *QWEN_VL_RENAMES,
    (r"^(layers|embed_tokens|norm)\.", r"language_model.model.\1."),
    (r"^(blocks|merger|patch_embed|pos_embed|deepstack_merger_list)\.", r"visual.\1."),
    (r"\.self_attn\.to_([qkv])\.", r".self_attn.\1_proj."),
    (r"\.self_attn\.to_out\.", ".self_attn.o_proj."),
    (r"\.self_attn\.norm_([qk])\.", r".self_attn.\1_norm."),
)

FAMILIES = [
    Family(
        "qwen3_vl",
        Qwen3VlModel,
        "a ViT over flattened patches with 2-D rotary, a learned position grid resampled to "
        "each image and DeepStack features of chosen blocks added into the first decoder "
        "layers at the image tokens, into Qwen3 with interleaved 3-D multimodal rope",
        ("Qwen/Qwen3-VL-2B-Instruct",),
        rules=Qwen3VlRules(),
        task=VLM_TASK,
        category="vlm",
        genai="qwen3_vl",
        renames=QWEN_VL_RENAMES,
    ),
    Family(
        "cosmos3_omni",
        Qwen3VlModel,
        "Qwen3-VL under its own name (NVIDIA Cosmos3's reasoner); the unified checkpoints' "
        "generator, sound and action towers are not read",
        ("nvidia/Cosmos3-Nano",),
        rules=Qwen3VlRules(),
        task=VLM_TASK,
        category="vlm",
        genai="qwen3_vl",
        unused=COSMOS3_OTHER_TOWERS,
        renames=COSMOS3_RENAMES,
    ),
]

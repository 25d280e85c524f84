"""Qwen2-VL: Qwen-VL's patch tower (converter/models/qwen_vl.py) with LayerNorm, an fc1/fc2 MLP
and every block attending within its frame, into Qwen2 with multimodal (3-D) rope.

Its vision_config names the tower's width `embed_dim` (the MLP `mlp_ratio` times it) and the
merger's output `hidden_size`. onnxruntime-genai runs it as its qwen2_5_vl type: the same image
processor, the same vision inputs and 3-D positions for images (window_size, which only its
windowed pipeline reads, is not written).
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, PlainMLP
from converter.components.encoder_attention import BlockAttention
from converter.config.reader import MAX_DIM, ConfigReader
from converter.errors import ConfigError
from converter.models.qwen2_5_vl import PatchMerger
from converter.models.qwen_vl import (
    QWEN_VL_RENAMES,
    PatchEmbed,
    QwenVisionConfig,
    QwenVlModel,
    QwenVlRules,
    VisionBlock,
    axial_rotary,
    patch_grid,
    read_patch_fields,
    same,
)
from converter.models.vision_language import Holder
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class Qwen2VlRules(QwenVlRules):
    text_type = "qwen2_vl_text"
    vision_type = "qwen2_vl_vision"

    def read_vision(self, r: ConfigReader) -> QwenVisionConfig:
        width = r.int("embed_dim")
        ratio = r.get("mlp_ratio", 4)
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or ratio <= 0:
            raise ConfigError(f"'mlp_ratio' = {ratio!r} must be a positive number")
        inner = int(width * ratio)  # transformers' int(embed_dim * mlp_ratio)
        if not 0 < inner <= MAX_DIM * 4:
            raise ConfigError(f"'mlp_ratio' = {ratio} gives an MLP {inner} wide")
        return QwenVisionConfig(
            **read_patch_fields(r, width),
            intermediate_size=inner,
            out_hidden_size=r.int("hidden_size"),
        )


class Qwen2VisionTransformer(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.patch_embed = Holder("proj", PatchEmbed(cfg, dtype))
        self.blocks = nn.ModuleList(
            [VisionBlock(cfg, dtype, LayerNorm, PlainMLP(cfg, dtype)) for _ in range(cfg.depth)]
        )
        self.merger = PatchMerger(cfg, dtype, LayerNorm)
        self.cfg, self.dtype, self.ep = cfg, dtype, ep

    def forward(self, op, pixels, grid):
        cfg = self.cfg
        x = self.patch_embed(op, pixels)
        places = patch_grid(op, grid, pixels, cfg.spatial_merge_size)
        rotary = axial_rotary(op, places, cfg.head_dim, cfg.rope_theta)
        frame = BlockAttention(op, self.ep, same(op, places.image, places.frame), self.dtype)
        for block in self.blocks:
            x = block(op, x, rotary, frame)
        return self.merger(op, x)


class Qwen2VlModel(QwenVlModel):
    def make_vision(self, cfg, dtype, ep) -> None:
        self.visual = Qwen2VisionTransformer(cfg.vision, dtype, ep)


FAMILIES = [
    Family(
        "qwen2_vl",
        Qwen2VlModel,
        "a ViT over flattened patches with 2-D rotary, LayerNorm, a quick-GELU MLP and "
        "attention within each frame, and a patch merger, into Qwen2 with 3-D multimodal rope",
        ("Qwen/Qwen2-VL-2B-Instruct",),
        rules=Qwen2VlRules(),
        task=VLM_TASK,
        category="vlm",
        genai="qwen2_5_vl",
        renames=QWEN_VL_RENAMES,
    ),
]

"""Qwen2.5-VL: Qwen-VL's patch tower (converter/models/qwen_vl.py) with RMSNorm, a gated MLP and
window attention, into Qwen2 with multimodal (3-D) rope.

The blocks at `fullatt_block_indexes` attend within a frame, the others within a window of
`window_size` pixels (window_size / patch_size / spatial_merge_size merge blocks a side).
transformers reorders the patches window by window and back; attention masked by window is the
same computation without the reordering. The merger normalizes with RMSNorm.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import GatedMLP, RMSNorm
from converter.components.encoder_attention import BlockAttention
from converter.config.reader import MAX_DIM, ConfigReader
from converter.config.vision import int_list
from converter.errors import ConfigError
from converter.models.qwen_vl import (
    NORM_EPS,
    QWEN_VL_RENAMES,
    MergerMlp,
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


class Qwen25VlRules(QwenVlRules):
    text_type = "qwen2_5_vl_text"
    vision_type = "qwen2_5_vl_vision"

    def read_vision(self, r: ConfigReader) -> QwenVisionConfig:
        fields = read_patch_fields(r, r.int("hidden_size"))
        depth = fields["depth"]
        full = (
            int_list(r, "fullatt_block_indexes", hi=depth - 1, lo=0)
            if r.get("fullatt_block_indexes")
            else ()
        )
        cfg = QwenVisionConfig(
            **fields,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            out_hidden_size=r.int("out_hidden_size"),
            window_size=r.int("window_size", hi=1 << 16),
            fullatt_block_indexes=full,
        )
        if window_blocks(cfg) < 1:
            raise ConfigError(
                f"'window_size' = {cfg.window_size} is smaller than one merge block "
                f"(patch_size {cfg.patch_size} x spatial_merge_size {cfg.spatial_merge_size})"
            )
        return cfg


def window_blocks(cfg: QwenVisionConfig) -> int:
    """Merge blocks along a window's side."""
    return cfg.window_size // cfg.spatial_merge_size // cfg.patch_size


class PatchMerger(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType, norm=RMSNorm):
        super().__init__()
        self.width = cfg.hidden_size * cfg.spatial_merge_size**2
        self.ln_q = norm(cfg.hidden_size, NORM_EPS, dtype)
        self.mlp = MergerMlp(self.width, cfg.out_hidden_size, dtype)

    def forward(self, op, x):
        x = op.Reshape(self.ln_q(op, x), [-1, self.width])
        return self.mlp(op, x)


class Qwen25VisionTransformer(nn.Module):
    def __init__(self, cfg: QwenVisionConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.patch_embed = Holder("proj", PatchEmbed(cfg, dtype))
        self.blocks = nn.ModuleList(
            [VisionBlock(cfg, dtype, RMSNorm, GatedMLP(cfg, dtype)) for _ in range(cfg.depth)]
        )
        self.merger = PatchMerger(cfg, dtype)
        self.cfg, self.dtype, self.ep = cfg, dtype, ep

    def forward(self, op, pixels, grid):
        cfg, blocks = self.cfg, window_blocks(self.cfg)
        x = self.patch_embed(op, pixels)
        places = patch_grid(op, grid, pixels, cfg.spatial_merge_size)
        rotary = axial_rotary(op, places, cfg.head_dim, cfg.rope_theta)
        full = BlockAttention(op, self.ep, same(op, places.image, places.frame), self.dtype)
        in_window = same(
            op,
            places.image,
            places.frame,
            op.Div(places.block_row, blocks),
            op.Div(places.block_col, blocks),
        )
        window = BlockAttention(op, self.ep, in_window, self.dtype)
        for i, block in enumerate(self.blocks):
            x = block(op, x, rotary, full if i in cfg.fullatt_block_indexes else window)
        return self.merger(op, x)


class Qwen25VlModel(QwenVlModel):
    def make_vision(self, cfg, dtype, ep) -> None:
        self.visual = Qwen25VisionTransformer(cfg.vision, dtype, ep)


FAMILIES = [
    Family(
        "qwen2_5_vl",
        Qwen25VlModel,
        "a ViT over flattened patches with 2-D rotary, window attention (full attention in "
        "fullatt_block_indexes) and a patch merger, into Qwen2 with 3-D multimodal rope",
        ("Qwen/Qwen2.5-VL-3B-Instruct",),
        rules=Qwen25VlRules(),
        task=VLM_TASK,
        category="vlm",
        genai="qwen2_5_vl",
        renames=QWEN_VL_RENAMES,
    ),
]

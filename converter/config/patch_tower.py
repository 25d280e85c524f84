"""PatchTowerConfig: the fields every vision tower over flattened patch rows reads (Pixtral,
VideoLLaMA 3, HunYuan-VL's towers extend it with their own)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PatchTowerConfig:
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_channels: int
    patch_size: int
    activation: str

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def patch_width(self) -> int:
        """A row of pixel_values: one patch's channels x pixels."""
        return self.num_channels * self.patch_size**2

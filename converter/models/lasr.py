"""LASR CTC (Google's MedASR): a Conformer over mel features. A dense layer and two strided
Conv1d (no padding, ReLU after each) subsample the frames, a dense layer back to the hidden
size, Conformer blocks (components/conformer.py) with rotary attention and weighted residuals
(`feed_forward_residual_weights`, `conv_residual_weights`), bias-free LayerNorms, a final
LayerNorm, and Parakeet's kernel-1 Conv1d CTC head."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.components.batch_norm import BATCH_NORM_UNUSED
from converter.components.conformer import (
    ConformerAttention,
    ConformerBlock,
    frame_mask,
    rotary_tables,
    subsampled_lengths,
)
from converter.components.conv import Conv1d
from converter.components.encoder_attention import encoder_attention
from converter.config.conformer import ConformerConfig, ConformerRules
from converter.errors import ConfigError
from converter.models.parakeet import CTC, ParakeetForCTC
from converter.registry import Family

SUBSAMPLING_CONVS = 2


class LasrRules(ConformerRules):
    def read_extra(self, r):
        rope = r.get("rope_parameters", default={})
        if not isinstance(rope, dict):
            raise ConfigError("'rope_parameters' must be a JSON object")
        if rope.get("rope_type", "default") != "default":
            r.refuse("rope_parameters", "only the default rotary embedding is built")
        return {
            "rope_theta": float(rope.get("rope_theta") or r.float("rope_theta")),
            "feed_forward_weights": _pair(r, "feed_forward_residual_weights"),
            "conv_weights": _pair(r, "conv_residual_weights"),
        }


def _pair(r, key: str) -> tuple[float, float]:
    value = r.get(key)
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise ConfigError(f"'{key}' must be two numbers (residual, update), got {value!r}")
    return float(value[0]), float(value[1])


class LasrSubsampling(nn.Module):
    """input_features [batch, frames, bins] -> [batch, subsampled frames, hidden]."""

    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType):
        super().__init__()
        size, channels = cfg.hidden_size, cfg.subsampling_channels
        kernel, stride = cfg.subsampling_kernel, cfg.subsampling_stride
        self.dense_0 = Linear(cfg.mel_bins, size, True, dtype)
        self.conv_0 = Conv1d(size, size, kernel, dtype, stride=stride)
        self.conv_1 = Conv1d(size, channels, kernel, dtype, stride=stride)
        self.dense_1 = Linear(channels, size, True, dtype)

    def forward(self, op, features):
        x = op.Transpose(op.Relu(self.dense_0(op, features)), perm=[0, 2, 1])
        x = op.Relu(self.conv_1(op, op.Relu(self.conv_0(op, x))))
        return self.dense_1(op, op.Transpose(x, perm=[0, 2, 1]))


class RotaryConformerBlock(ConformerBlock):
    attention_cls = ConformerAttention


class LasrEncoder(nn.Module):
    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.subsampler = LasrSubsampling(cfg, dtype)
        weights = cfg.extra["feed_forward_weights"], cfg.extra["conv_weights"]
        self.layers = nn.ModuleList(
            [RotaryConformerBlock(cfg, dtype, *weights) for _ in range(cfg.num_hidden_layers)]
        )
        self.out_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype, bias=False)
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def forward(self, op, features, attention_mask):
        cfg = self.cfg
        if self.dtype != ir.DataType.FLOAT:
            features = op.Cast(features, to=self.dtype)
        x = self.subsampler(op, features)
        lengths = op.ReduceSum(attention_mask, [1], keepdims=0)
        for _ in range(SUBSAMPLING_CONVS):
            lengths = subsampled_lengths(
                op, lengths, cfg.subsampling_kernel, cfg.subsampling_stride
            )
        mask = frame_mask(op, x, lengths)
        keep = op.Unsqueeze(op.Cast(mask, to=self.dtype), [1])
        kernel = encoder_attention(op, self.ep, mask, self.dtype)
        frames = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        # computed in float32, as transformers does, then in the graph's dtype
        tables = rotary_tables(op, frames, cfg.head_dim, cfg.extra["rope_theta"])
        positions = tuple(op.Cast(table, to=self.dtype) for table in tables)
        for layer in self.layers:
            x = layer(op, x, kernel, positions, keep)
        return self.out_norm(op, x)


class LasrForCTC(ParakeetForCTC):
    encoder_cls = LasrEncoder


FAMILIES = [
    Family(
        "lasr_ctc",
        LasrForCTC,
        "Conformer over mel features: dense and Conv1d subsampling (4x), rotary attention, "
        "weighted residuals, a Conv1d CTC head",
        ("google/medasr",),
        rules=LasrRules("lasr_encoder", norm_eps=None, norm_bias=False),
        task=CTC,
        category="audio",
        unused=(BATCH_NORM_UNUSED,),
    ),
]

"""WavLM: wav2vec2's layout (models/speech_encoder.py) with a gated relative position bias.
The first layer's attention holds a table of bias per (bucketed) distance and head; every
layer scales that bias per query frame and head by a gate computed from its own input, and
adds it to its attention scores."""

from __future__ import annotations

import math

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.config.audio import AudioRules
from converter.config.reader import MAX_POSITIONS
from converter.models.encoder import Table
from converter.models.speech_encoder import (
    PreNormSpeechLayer,
    SpeechAttention,
    SpeechBody,
    SpeechEncoder,
    SpeechEncoderModel,
    SpeechLayer,
)
from converter.models.wav2vec2 import PRETRAINING_ONLY
from converter.registry import Family


class WavLMRules(AudioRules):
    def read_extra(self, r):
        return {
            "num_buckets": r.int("num_buckets", lo=2, hi=MAX_POSITIONS),
            "max_bucket_distance": r.int("max_bucket_distance", hi=MAX_POSITIONS),
        }


def relative_buckets(op, frames, num_buckets: int, max_distance: int):
    """transformers' bucket of each (query, key) distance [frames, frames]: one half of the
    buckets per direction, exact below a quarter of them, then logarithmic up to
    `max_distance` (computed in float32 as transformers does)."""
    half = num_buckets // 2
    exact = half // 2
    positions = op.Range(0, frames, 1)
    relative = op.Sub(op.Unsqueeze(positions, [0]), op.Unsqueeze(positions, [1]))
    direction = op.Mul(op.Cast(op.Greater(relative, 0), to=ir.DataType.INT64), half)
    distance = op.Abs(relative)
    # distances below `exact` take the exact bucket; the clip only keeps log() finite there
    far = op.Cast(op.Max(distance, 1), to=ir.DataType.FLOAT)
    scaled = op.Div(op.Log(op.Div(far, float(exact))), math.log(max_distance / exact))
    large = op.Cast(op.Add(op.Mul(scaled, float(half - exact)), float(exact)), to=ir.DataType.INT64)
    large = op.Min(large, half - 1)
    return op.Add(direction, op.Where(op.Less(distance, exact), distance, large))


class RelativeBias:
    """The ungated bias the first layer's attention computes from its table, which every
    later layer reads (as transformers passes it on)."""

    value = None


class WavLMAttention(SpeechAttention):
    """The first layer's also holds the bias table (`rel_attn_embed`, set by the encoder)."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        heads = cfg.num_attention_heads
        self.gru_rel_pos_const = nn.Parameter([1, heads, 1, 1], dtype)
        self.gru_rel_pos_linear = Linear(cfg.head_dim, 8, True, dtype)
        self.rel_attn_embed = None
        self.head_dim, self.dtype = cfg.head_dim, dtype

    def position_bias(self, op, x):
        """The ungated bias [1, heads, frames, frames] of the table, for x's frames."""
        frames = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        buckets = relative_buckets(op, frames, *self.buckets)
        return op.Unsqueeze(op.Transpose(self.rel_attn_embed(op, buckets), perm=[2, 0, 1]), [0])

    def forward(self, op, x, kernel, bias: RelativeBias):
        if self.rel_attn_embed is not None:
            bias.value = self.position_bias(op, x)
        # per head of x: 8 projections summed in fours, the two sigmoid gates a and b
        per_head = op.Transpose(op.Reshape(x, [0, 0, -1, self.head_dim]), perm=[0, 2, 1, 3])
        pairs = op.Reshape(self.gru_rel_pos_linear(op, per_head), [0, 0, 0, 2, 4])
        gates = op.Sigmoid(op.ReduceSum(pairs, [-1], keepdims=0))
        gate_a, gate_b = op.Split(gates, axis=-1, num_outputs=2, _outputs=2)
        gate = op.Add(op.Mul(gate_a, op.Sub(op.Mul(gate_b, self.gru_rel_pos_const), 1.0)), 2.0)
        return super().forward(op, x, kernel, op.Mul(gate, bias.value))


class WavLMLayer(SpeechLayer):
    attention_cls = WavLMAttention


class PreNormWavLMLayer(PreNormSpeechLayer):
    attention_cls = WavLMAttention


class WavLMEncoder(SpeechEncoder):
    layer_cls = WavLMLayer
    pre_norm_layer_cls = PreNormWavLMLayer

    def make_layer(self, cfg, dtype, index: int):
        layer = super().make_layer(cfg, dtype, index)
        if index == 0:
            heads, buckets = cfg.num_attention_heads, cfg.extra["num_buckets"]
            layer.attention.rel_attn_embed = Table(buckets, heads, dtype)
            layer.attention.buckets = buckets, cfg.extra["max_bucket_distance"]
        return layer

    def attention_bias(self, op, x):
        return RelativeBias()


class WavLMBody(SpeechBody):
    encoder_cls = WavLMEncoder


class WavLMModel(SpeechEncoderModel):
    body_cls = WavLMBody
    body_name = "wavlm"


FAMILIES = [
    Family(
        "wavlm",
        WavLMModel,
        "wav2vec2's layout with a gated relative position bias in every layer's attention",
        ("microsoft/wavlm-base-plus",),
        rules=WavLMRules(),
        task="feature-extraction",
        category="audio",
        unused=PRETRAINING_ONLY,
        prefix="wavlm.",
    ),
]

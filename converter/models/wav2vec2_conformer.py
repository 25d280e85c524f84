"""wav2vec2-Conformer: wav2vec2's feature encoder and projection (models/speech_features.py)
under Conformer blocks: half-step feed-forward, self-attention with relative (Transformer-XL)
or rotary positions, a depthwise convolution module, a second half-step feed-forward, a norm.
transformers builds the positional convolution of wav2vec2 too but never runs it: its weights
are left unread here as well."""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.batch_norm import BATCH_NORM_UNUSED, BatchNorm1d
from converter.components.conformer import (
    relative_embeddings,
    relative_scores,
    rotary_tables,
    rotate_heads,
)
from converter.components.conv import Conv1d
from converter.components.encoder_attention import encoder_attention
from converter.config.audio import MAX_KERNEL, AudioRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.speech_encoder import FeedForward, SpeechBody, SpeechEncoderModel
from converter.models.speech_features import TORCH_NORM_EPS, zero_padding
from converter.models.wav2vec2 import PRETRAINING_ONLY
from converter.registry import Family

POSITIONS = ("relative", "rotary", None)


class ConformerRules(AudioRules):
    def read_extra(self, r):
        positions = r.get("position_embeddings_type")
        if positions not in POSITIONS:
            r.refuse("position_embeddings_type", f"one of {POSITIONS} is built")
        kernel = r.int("conv_depthwise_kernel_size", hi=MAX_KERNEL)
        if kernel % 2 == 0:
            raise ConfigError(f"'conv_depthwise_kernel_size' = {kernel} must be odd")
        return {
            "positions": positions,
            "rotary_base": r.float("rotary_embedding_base", default=10000.0),
            "depthwise_kernel": kernel,
        }


def exponential_frequencies(size: int) -> np.ndarray:
    """exp(-2i ln(10000) / size): transformers' frequencies of wav2vec2-Conformer's relative
    embeddings (in float32 they differ from 1 / 10000^(2i / size) by rounding)."""
    steps = np.arange(0, size, 2, dtype=np.float32) * np.float32(-math.log(10000.0) / size)
    return np.exp(steps)


class ConformerSelfAttention(nn.Module):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        size, heads = cfg.hidden_size, cfg.num_attention_heads
        self.linear_q = Linear(size, size, True, dtype)
        self.linear_k = Linear(size, size, True, dtype)
        self.linear_v = Linear(size, size, True, dtype)
        self.linear_out = Linear(size, size, True, dtype)
        self.positions = cfg.extra["positions"]
        if self.positions == "relative":
            self.linear_pos = Linear(size, size, False, dtype)
            self.pos_bias_u = nn.Parameter([heads, cfg.head_dim], dtype)
            self.pos_bias_v = nn.Parameter([heads, cfg.head_dim], dtype)
        self.heads, self.head_dim, self.dtype = heads, cfg.head_dim, dtype

    def forward(self, op, x, kernel, positions):
        """`positions`: (cos, sin) when rotary, the relative embeddings when relative."""
        query_key = x
        if self.positions == "rotary":
            query_key = rotate_heads(op, x, *positions, self.heads, self.head_dim)
        q, k = self.linear_q(op, query_key), self.linear_k(op, query_key)
        v, bias = self.linear_v(op, x), None
        if self.positions == "relative":
            bias = self.relative_scores(op, q, positions)
            q = op.Add(q, op.Reshape(self.pos_bias_u, [-1]))
        return self.linear_out(op, kernel(op, q, k, v, self.heads, self.head_dim**-0.5, bias))

    def relative_scores(self, op, q, embeddings):
        projected = self.linear_pos(op, embeddings)
        scores = relative_scores(op, q, projected, self.pos_bias_v, self.heads, self.head_dim)
        return op.Mul(scores, self.head_dim**-0.5)


class ConvolutionModule(nn.Module):
    """LayerNorm, pointwise conv to twice the width, GLU, depthwise conv, BatchNorm, the
    activation, pointwise conv back; over x [batch, frames, hidden]."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        size, kernel = cfg.hidden_size, cfg.extra["depthwise_kernel"]
        self.layer_norm = LayerNorm(size, TORCH_NORM_EPS, dtype)
        self.pointwise_conv1 = Conv1d(size, 2 * size, 1, dtype, bias=False)
        self.depthwise_conv = Conv1d(
            size, size, kernel, dtype, padding=(kernel - 1) // 2, groups=size, bias=False
        )
        self.batch_norm = BatchNorm1d(size, dtype)
        self.pointwise_conv2 = Conv1d(size, size, 1, dtype, bias=False)
        self.act = cfg.activation

    def forward(self, op, x):
        x = op.Transpose(self.layer_norm(op, x), perm=[0, 2, 1])
        values, gates = op.Split(self.pointwise_conv1(op, x), axis=1, num_outputs=2, _outputs=2)
        x = self.depthwise_conv(op, op.Mul(values, op.Sigmoid(gates)))
        x = activation(op, self.act, self.batch_norm(op, x))
        return op.Transpose(self.pointwise_conv2(op, x), perm=[0, 2, 1])


class ConformerLayer(nn.Module):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.ffn1_layer_norm = LayerNorm(size, TORCH_NORM_EPS, dtype)
        self.ffn1 = FeedForward(cfg, dtype)
        self.self_attn_layer_norm = LayerNorm(size, TORCH_NORM_EPS, dtype)
        self.self_attn = ConformerSelfAttention(cfg, dtype)
        self.conv_module = ConvolutionModule(cfg, dtype)
        self.ffn2_layer_norm = LayerNorm(size, TORCH_NORM_EPS, dtype)
        self.ffn2 = FeedForward(cfg, dtype)
        self.final_layer_norm = LayerNorm(size, TORCH_NORM_EPS, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # every norm but the first reads a residual sum
        return {
            "skip_norms": 4 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, positions):
        x = op.Add(op.Mul(self.ffn1(op, self.ffn1_layer_norm(op, x)), 0.5), x)
        x = op.Add(self.self_attn(op, self.self_attn_layer_norm(op, x), kernel, positions), x)
        x = op.Add(x, self.conv_module(op, x))
        x = op.Add(op.Mul(self.ffn2(op, self.ffn2_layer_norm(op, x)), 0.5), x)
        return self.final_layer_norm(op, x)


class ConformerEncoder(nn.Module):
    """The frames (those the mask drops zeroed), the Conformer layers, a final LayerNorm."""

    def __init__(self, cfg, dtype: ir.DataType, ep, weight_norm):
        super().__init__()
        layers = [ConformerLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        self.layers = nn.ModuleList(layers)
        self.layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def positions(self, op, x):
        cfg = self.cfg
        frames = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        # computed in float32, as transformers does, then in the graph's dtype
        if cfg.extra["positions"] == "relative":
            embeddings = relative_embeddings(op, frames, exponential_frequencies(cfg.hidden_size))
            return op.Cast(embeddings, to=self.dtype)
        if cfg.extra["positions"] == "rotary":
            tables = rotary_tables(op, frames, cfg.head_dim, cfg.extra["rotary_base"])
            return tuple(op.Cast(table, to=self.dtype) for table in tables)
        return None

    def forward(self, op, x, mask):
        x = zero_padding(op, x, mask, self.dtype)
        kernel = encoder_attention(op, self.ep, mask, self.dtype)
        positions = self.positions(op, x)
        states = [x]
        for layer in self.layers:
            x = layer(op, x, kernel, positions)
            states.append(x)
        return self.layer_norm(op, x), states


class ConformerBody(SpeechBody):
    encoder_cls = ConformerEncoder


class Wav2Vec2ConformerModel(SpeechEncoderModel):
    body_cls = ConformerBody
    body_name = "wav2vec2_conformer"


FAMILIES = [
    Family(
        "wav2vec2-conformer",
        Wav2Vec2ConformerModel,
        "wav2vec2's feature encoder under Conformer blocks (relative or rotary positions, "
        "depthwise convolution module)",
        ("facebook/wav2vec2-conformer-rope-large-960h-ft",),
        rules=ConformerRules(),
        task="feature-extraction",
        category="audio",
        unused=(
            *PRETRAINING_ONLY,
            BATCH_NORM_UNUSED,
            r"(wav2vec2_conformer\.)?encoder\.pos_conv_embed\..*",
            r"(wav2vec2_conformer\.)?encoder\.embed_positions\.inv_freq",
        ),
        prefix="wav2vec2_conformer.",
    ),
]

"""wav2vec2-BERT (w2v-BERT 2.0): stacked mel features (input_features [batch, frames, 160])
normalised and projected to the hidden size, then Conformer layers: a half-step feed-forward,
self-attention with Shaw's relative-key distances (each query's dot product with a learned
embedding of the clamped distance to each key, added to the scores), a convolution module (a
causal depthwise conv over the masked frames, a LayerNorm in place of BatchNorm), a second
half-step feed-forward and a LayerNorm. The heads are wav2vec2's (models/speech_encoder.py)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv import Conv1d
from converter.components.embedding import Embedding
from converter.components.encoder_attention import encoder_attention
from converter.config.wav2vec2_bert import W2vBertConfig, W2vBertRules
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.speech_encoder import FeedForward, SpeechEncoderModel
from converter.models.speech_features import FeatureProjection, zero_padding
from converter.registry import Family


def clamped_distances(op, frames, left: int, right: int):
    """[frames, frames] int64: key j - query i clamped to [-left, right], plus left (a row of
    the distance embedding)."""
    steps = op.Range(0, frames, 1)
    distances = op.Sub(op.Unsqueeze(steps, [0]), op.Unsqueeze(steps, [1]))
    return op.Add(
        op.Clip(distances, op.Constant(value_int=-left), op.Constant(value_int=right)), left
    )


class RelativeKeyAttention(nn.Module):
    """Scores q.k + q.e(j - i), both scaled by 1 / sqrt(head_dim): the second rides on the
    kernel's additive bias [batch, heads, frames, frames]."""

    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.linear_q = Linear(size, size, True, dtype)
        self.linear_k = Linear(size, size, True, dtype)
        self.linear_v = Linear(size, size, True, dtype)
        self.linear_out = Linear(size, size, True, dtype)
        positions = cfg.left_positions + cfg.right_positions + 1
        self.distance_embedding = Embedding(positions, cfg.head_dim, dtype)
        self.heads, self.head_dim = cfg.num_attention_heads, cfg.head_dim

    def forward(self, op, x, kernel, distances):
        q, k, v = self.linear_q(op, x), self.linear_k(op, x), self.linear_v(op, x)
        scale = self.head_dim**-0.5
        embedded = self.distance_embedding(op, distances)  # [frames, frames, head_dim]
        # per query frame: [batch * heads, head_dim] times [head_dim, key frames]
        queries = op.Transpose(op.Reshape(q, [0, 0, -1, self.head_dim]), perm=[1, 0, 2, 3])
        queries = op.Reshape(queries, [0, -1, self.head_dim])
        scores = op.MatMul(queries, op.Transpose(embedded, perm=[0, 2, 1]))
        frames = op.Shape(x, start=1, end=2)
        scores = op.Reshape(scores, op.Concat([0, -1, self.heads], frames, axis=0))
        scores = op.Transpose(scores, perm=[1, 2, 0, 3])
        bias = op.Mul(scores, scale)
        return self.linear_out(op, kernel(op, q, k, v, self.heads, scale, bias))


class CausalConvolutionModule(nn.Module):
    """LayerNorm, the dropped frames zeroed, pointwise conv to twice the width, GLU, a
    depthwise conv over each frame and the kernel - 1 before it, LayerNorm over channels, the
    activation, pointwise conv back; over x [batch, frames, hidden]."""

    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType):
        super().__init__()
        size, kernel, eps = cfg.hidden_size, cfg.depthwise_kernel, cfg.norm_eps
        self.layer_norm = LayerNorm(size, eps, dtype)
        self.pointwise_conv1 = Conv1d(size, 2 * size, 1, dtype, bias=False)
        self.depthwise_conv = Conv1d(size, size, kernel, dtype, groups=size, bias=False)
        self.depthwise_layer_norm = LayerNorm(size, eps, dtype)
        self.pointwise_conv2 = Conv1d(size, size, 1, dtype, bias=False)
        self.kernel, self.act, self.dtype = kernel, cfg.activation, dtype

    def forward(self, op, x, mask):
        x = zero_padding(op, self.layer_norm(op, x), mask, self.dtype)
        x = self.pointwise_conv1(op, op.Transpose(x, perm=[0, 2, 1]))
        values, gates = op.Split(x, axis=1, num_outputs=2, _outputs=2)
        x = op.Pad(op.Mul(values, op.Sigmoid(gates)), [0, 0, self.kernel - 1, 0, 0, 0])
        x = op.Transpose(self.depthwise_conv(op, x), perm=[0, 2, 1])
        x = activation(op, self.act, self.depthwise_layer_norm(op, x))
        return op.Transpose(
            self.pointwise_conv2(op, op.Transpose(x, perm=[0, 2, 1])), perm=[0, 2, 1]
        )


class W2vBertLayer(nn.Module):
    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType):
        super().__init__()
        size, eps = cfg.hidden_size, cfg.norm_eps
        self.ffn1_layer_norm = LayerNorm(size, eps, dtype)
        self.ffn1 = FeedForward(cfg, dtype)
        self.self_attn_layer_norm = LayerNorm(size, eps, dtype)
        self.self_attn = RelativeKeyAttention(cfg, dtype)
        self.conv_module = CausalConvolutionModule(cfg, dtype)
        self.ffn2_layer_norm = LayerNorm(size, eps, dtype)
        self.ffn2 = FeedForward(cfg, dtype)
        self.final_layer_norm = LayerNorm(size, eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # every norm but the first reads a residual sum (the convolution module's included)
        return {
            "skip_norms": 4 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, distances, mask):
        x = op.Add(op.Mul(self.ffn1(op, self.ffn1_layer_norm(op, x)), 0.5), x)
        attended = self.self_attn(op, self.self_attn_layer_norm(op, x), kernel, distances)
        x = op.Add(attended, x)
        x = op.Add(x, self.conv_module(op, x, mask))
        x = op.Add(op.Mul(self.ffn2(op, self.ffn2_layer_norm(op, x)), 0.5), x)
        return self.final_layer_norm(op, x)


class W2vBertEncoder(nn.Module):
    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.layers = nn.ModuleList(
            [W2vBertLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        )
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def forward(self, op, x, mask):
        """The last hidden state and the hidden states (the first layer's input, then each
        layer's output)."""
        x = zero_padding(op, x, mask, self.dtype)
        kernel = encoder_attention(op, self.ep, mask, self.dtype)
        frames = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        distances = clamped_distances(op, frames, self.cfg.left_positions, self.cfg.right_positions)
        states = [x]
        for layer in self.layers:
            x = layer(op, x, kernel, distances, mask)
            states.append(x)
        return x, states


class W2vBertBody(nn.Module):
    """Wav2Vec2BertModel: the feature projection and the encoder."""

    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType, ep, weight_norm):
        super().__init__()
        self.feature_projection = FeatureProjection(cfg, dtype)
        self.encoder = W2vBertEncoder(cfg, dtype, ep)
        self.dtype = dtype

    def forward(self, op, inputs):
        """(last hidden state, hidden states, the frames the mask keeps)."""
        features = inputs.input_values
        if self.dtype != ir.DataType.FLOAT:
            features = op.Cast(features, to=self.dtype)
        mask = op.Cast(inputs.attention_mask, to=ir.DataType.BOOL)
        hidden, states = self.encoder(op, self.feature_projection(op, features), mask)
        return hidden, states, mask


class Wav2Vec2BertModel(SpeechEncoderModel):
    body_cls = W2vBertBody
    body_name = "wav2vec2_bert"


FAMILIES = [
    Family(
        "wav2vec2-bert",
        Wav2Vec2BertModel,
        "Conformer layers over stacked mel features: Shaw relative-key attention, a causal "
        "depthwise convolution module",
        ("facebook/w2v-bert-2.0",),
        rules=W2vBertRules(),
        task="feature-extraction",
        category="audio",
        unused=(r"(wav2vec2_bert\.)?masked_spec_embed",),
        prefix="wav2vec2_bert.",
    ),
]

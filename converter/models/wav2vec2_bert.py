"""wav2vec2-BERT (w2v-BERT 2.0): stacked mel features (input_features [batch, frames, 160])
normalised and projected to the hidden size, then Conformer layers: a half-step feed-forward,
self-attention with Shaw's relative-key distances (each query's dot product with a learned
embedding of the clamped distance to each key, added to the scores), a convolution module (a
causal depthwise conv over the masked frames, a LayerNorm in place of BatchNorm), a second
half-step feed-forward and a LayerNorm. CTC fine-tunes may add a feed-forward and a
convolutional adapter (strided GLU convs subsampling the frames, attention, a feed-forward)
after the encoder. The heads are wav2vec2's (models/speech_encoder.py)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conformer import (
    frame_mask,
    relative_embeddings,
    rotary_tables,
    subsampled_lengths,
)
from converter.components.conv import Conv1d
from converter.components.embedding import Embedding
from converter.components.encoder_attention import encoder_attention
from converter.config.wav2vec2_bert import Adapter, W2vBertConfig, W2vBertRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.speech_encoder import SpeechEncoderModel
from converter.models.speech_features import FeatureProjection, zero_padding
from converter.models.wav2vec2_conformer import ConformerSelfAttention, exponential_frequencies
from converter.registry import Family
from converter.tasks.audio_encoding import FRAMES
from converter.tasks.encoding import BATCH


def clamped_distances(op, frames, left: int, right: int):
    """[frames, frames] int64: key j - query i clamped to [-left, right], plus left (a row of
    the distance embedding)."""
    steps = op.Range(0, frames, 1)
    distances = op.Sub(op.Unsqueeze(steps, [0]), op.Unsqueeze(steps, [1]))
    return op.Add(
        op.Clip(distances, op.Constant(value_int=-left), op.Constant(value_int=right)), left
    )


class SelfAttention(nn.Module):
    """Plain multi-head attention at `size` (the adapter's)."""

    def __init__(self, size: int, heads: int, dtype: ir.DataType):
        super().__init__()
        self.linear_q = Linear(size, size, True, dtype)
        self.linear_k = Linear(size, size, True, dtype)
        self.linear_v = Linear(size, size, True, dtype)
        self.linear_out = Linear(size, size, True, dtype)
        self.heads, self.head_dim = heads, size // heads

    def forward(self, op, x, kernel):
        q, k, v = self.linear_q(op, x), self.linear_k(op, x), self.linear_v(op, x)
        return self.linear_out(op, kernel(op, q, k, v, self.heads, self.head_dim**-0.5))


class RelativeKeyAttention(SelfAttention):
    """Scores q.k + q.e(j - i), both scaled by 1 / sqrt(head_dim): the second rides on the
    kernel's additive bias [batch, heads, frames, frames]."""

    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType):
        super().__init__(cfg.hidden_size, cfg.num_attention_heads, dtype)
        positions = cfg.left_positions + cfg.right_positions + 1
        self.distance_embedding = Embedding(positions, cfg.head_dim, dtype)

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


class FeedForward(nn.Module):
    def __init__(self, size: int, intermediate: int, act: str, dtype: ir.DataType):
        super().__init__()
        self.intermediate_dense = Linear(size, intermediate, True, dtype)
        self.output_dense = Linear(intermediate, size, True, dtype)
        self.act = act

    def forward(self, op, x):
        return self.output_dense(op, activation(op, self.act, self.intermediate_dense(op, x)))


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
        self.ffn1 = FeedForward(size, cfg.intermediate_size, cfg.activation, dtype)
        self.self_attn_layer_norm = LayerNorm(size, eps, dtype)
        relative_key = cfg.positions == "relative_key"
        self.self_attn = (RelativeKeyAttention if relative_key else ConformerSelfAttention)(
            cfg, dtype
        )
        self.conv_module = CausalConvolutionModule(cfg, dtype)
        self.ffn2_layer_norm = LayerNorm(size, eps, dtype)
        self.ffn2 = FeedForward(size, cfg.intermediate_size, cfg.activation, dtype)
        self.final_layer_norm = LayerNorm(size, eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # every norm but the first reads a residual sum (the convolution module's included)
        return {
            "skip_norms": 4 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, positions, mask):
        """`positions`: what the attention reads (see W2vBertEncoder.positions)."""
        x = op.Add(op.Mul(self.ffn1(op, self.ffn1_layer_norm(op, x)), 0.5), x)
        attended = self.self_attn(op, self.self_attn_layer_norm(op, x), kernel, positions)
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

    def positions(self, op, x):
        """The clamped distances (relative_key), the relative embeddings (relative), the
        (cos, sin) tables (rotary) or None; embeddings in float32, as transformers computes
        them, then in the graph's dtype."""
        cfg = self.cfg
        frames = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        if cfg.positions == "relative_key":
            return clamped_distances(op, frames, cfg.left_positions, cfg.right_positions)
        if cfg.positions == "relative":
            embeddings = relative_embeddings(op, frames, exponential_frequencies(cfg.hidden_size))
            return op.Cast(embeddings, to=self.dtype)
        if cfg.positions == "rotary":
            tables = rotary_tables(op, frames, cfg.head_dim, cfg.rotary_base)
            return tuple(op.Cast(table, to=self.dtype) for table in tables)
        return None

    def forward(self, op, x, mask):
        """The last hidden state and the hidden states (the first layer's input, then each
        layer's output)."""
        x = zero_padding(op, x, mask, self.dtype)
        kernel = encoder_attention(op, self.ep, mask, self.dtype)
        positions = self.positions(op, x)
        states = [x]
        for layer in self.layers:
            x = layer(op, x, kernel, positions, mask)
            states.append(x)
        return x, states


def halved_frames(op, x):
    """x [batch, frames, 2 size] through GLU over its last axis."""
    values, gates = op.Split(x, axis=2, num_outputs=2, _outputs=2)
    return op.Mul(values, op.Sigmoid(gates))


class AdapterLayer(nn.Module):
    """Strided convs (GLU) subsample the residual and the attention's input; attention over
    the frames each row's subsampled length keeps; a feed-forward, added back."""

    def __init__(self, cfg: W2vBertConfig, adapter: Adapter, dtype: ir.DataType):
        super().__init__()
        size, eps = adapter.hidden_size, cfg.norm_eps
        conv = {"stride": adapter.stride, "padding": adapter.stride // 2}
        self.residual_layer_norm = LayerNorm(size, eps, dtype)
        self.residual_conv = Conv1d(size, 2 * size, adapter.kernel, dtype, **conv)
        self.self_attn_layer_norm = LayerNorm(size, eps, dtype)
        self.self_attn_conv = Conv1d(size, 2 * size, adapter.kernel, dtype, **conv)
        self.self_attn = SelfAttention(size, cfg.num_attention_heads, dtype)
        self.ffn_layer_norm = LayerNorm(size, eps, dtype)
        self.ffn = FeedForward(size, cfg.intermediate_size, adapter.activation, dtype)
        self.dtype = dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # the feed-forward's norm reads the attention's residual sum
        return {
            "skip_norms": 1 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def subsampled(self, op, conv, x):
        return halved_frames(op, op.Transpose(conv(op, op.Transpose(x, perm=[0, 2, 1])), [0, 2, 1]))

    def forward(self, op, x, ep, lengths):
        residual = self.subsampled(op, self.residual_conv, self.residual_layer_norm(op, x))
        x = self.subsampled(op, self.self_attn_conv, self.self_attn_layer_norm(op, x))
        kernel = encoder_attention(op, ep, frame_mask(op, x, lengths), self.dtype)
        x = op.Add(self.self_attn(op, x, kernel), residual)
        return op.Add(self.ffn(op, self.ffn_layer_norm(op, x)), x)


class ConvAdapter(nn.Module):
    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType, ep):
        super().__init__()
        adapter = cfg.adapter
        if adapter.hidden_size != cfg.hidden_size:
            self.proj = Linear(cfg.hidden_size, adapter.hidden_size, True, dtype)
            self.proj_layer_norm = LayerNorm(adapter.hidden_size, cfg.norm_eps, dtype)
        else:
            self.proj = self.proj_layer_norm = None
        self.layers = nn.ModuleList(
            [AdapterLayer(cfg, adapter, dtype) for _ in range(adapter.layers)]
        )
        self.adapter, self.ep = adapter, ep
        # the first layer's norms read a residual sum where the intermediate feed-forward's
        # is not projected first
        self.reads_sum = self.proj is None and cfg.intermediate_ffn

    def expected_fusions(self, plan) -> dict[str, int]:
        # every layer's input norms but the first's read the layer before's residual sum
        sums = self.adapter.layers - 1 + int(self.reads_sum)
        return {"skip_norms": sums if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, mask):
        """x and the frames each row keeps after the adapter ([batch, frames] bool)."""
        if self.proj is not None:
            x = self.proj_layer_norm(op, self.proj(op, x))
        lengths = op.ReduceSum(op.Cast(mask, to=ir.DataType.INT64), [1], keepdims=0)
        kernel, stride = self.adapter.kernel, self.adapter.stride
        for layer in self.layers:
            lengths = subsampled_lengths(op, lengths, kernel, stride, kernel // 2)
            x = layer(op, x, self.ep, lengths)
        return x, frame_mask(op, x, lengths)


class W2vBertBody(nn.Module):
    """Wav2Vec2BertModel: the feature projection, the encoder, the intermediate feed-forward
    and the adapter where the config has them."""

    def __init__(self, cfg: W2vBertConfig, dtype: ir.DataType, ep, weight_norm):
        super().__init__()
        self.feature_projection = FeatureProjection(cfg, dtype)
        self.encoder = W2vBertEncoder(cfg, dtype, ep)
        self.intermediate_ffn = None
        if cfg.intermediate_ffn:
            size = cfg.hidden_size
            self.intermediate_ffn = FeedForward(size, cfg.intermediate_size, "relu", dtype)
        self.adapter = ConvAdapter(cfg, dtype, ep) if cfg.adapter is not None else None
        self.dtype = dtype

    def forward(self, op, inputs):
        """(last hidden state, hidden states, the frames the mask keeps)."""
        features = inputs.input_values
        if self.dtype != ir.DataType.FLOAT:
            features = op.Cast(features, to=self.dtype)
        mask = op.Cast(inputs.attention_mask, to=ir.DataType.BOOL)
        hidden, states = self.encoder(op, self.feature_projection(op, features), mask)
        if self.intermediate_ffn is not None:
            hidden = op.Add(hidden, op.Mul(self.intermediate_ffn(op, hidden), 0.5))
        if self.adapter is not None:
            hidden, mask = self.adapter(op, hidden, mask)
        return hidden, states, mask


class Wav2Vec2BertModel(SpeechEncoderModel):
    """wav2vec2's heads; the CTC head and the hidden states at the adapter's width."""

    body_cls = W2vBertBody
    body_name = "wav2vec2_bert"

    def __init__(self, cfg: W2vBertConfig, dtype, ep, task: str, tensors):
        if cfg.adapter is not None and task == "audio-classification":
            raise ConfigError("'add_adapter' = True: transformers classifies without the adapter")
        super().__init__(cfg, dtype, ep, task, tensors)
        if task == "automatic-speech-recognition":
            self.lm_head = Linear(cfg.output_size, cfg.vocab_size, True, dtype)

    def forward(self, op, inputs) -> dict:
        outputs = super().forward(op, inputs)
        if self.task == "feature-extraction":
            hidden, _ = outputs["last_hidden_state"]
            outputs["last_hidden_state"] = (hidden, [BATCH, FRAMES, self.cfg.output_size])
        return outputs


FAMILIES = [
    Family(
        "wav2vec2-bert",
        Wav2Vec2BertModel,
        "Conformer layers over stacked mel features: Shaw relative-key (or relative, rotary) "
        "attention, a causal depthwise convolution module, the convolutional adapter of CTC "
        "fine-tunes",
        ("facebook/w2v-bert-2.0",),
        rules=W2vBertRules(),
        task="feature-extraction",
        category="audio",
        unused=(r"(wav2vec2_bert\.)?masked_spec_embed",),
        prefix="wav2vec2_bert.",
    ),
]

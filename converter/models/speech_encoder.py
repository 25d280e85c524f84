"""The wav2vec2-layout speech encoder (wav2vec2, HuBERT, UniSpeech, Data2Vec-Audio, ...): the
feature encoder and projection (models/speech_features.py), a positional convolution added to
the frames, post-norm (or, `do_stable_layer_norm`, pre-norm) transformer layers over the frames
the mask keeps, and the heads: CTC (`lm_head`), audio classification (`projector`, mean over
the kept frames, `classifier`) and the hidden states themselves.

Module paths are the checkpoints' names (`wav2vec2.encoder.layers.3.attention.q_proj.weight`);
a family with another base-model prefix sets `body_name`.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv import weight_norm_names
from converter.components.encoder_attention import encoder_attention
from converter.config.audio import AudioEncoderConfig
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM, ExecutionProvider
from converter.models.speech_features import (
    FeatureEncoder,
    FeatureProjection,
    PositionalConvEmbedding,
    frame_mask,
    zero_padding,
)
from converter.tasks.audio_encoding import AUDIO_TASKS, FRAMES, AudioInputs
from converter.tasks.encoding import BATCH


class SpeechAttention(nn.Module):
    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.q_proj = Linear(size, size, True, dtype)
        self.k_proj = Linear(size, size, True, dtype)
        self.v_proj = Linear(size, size, True, dtype)
        self.out_proj = Linear(size, size, True, dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel, bias=None):
        q, k, v = self.q_proj(op, x), self.k_proj(op, x), self.v_proj(op, x)
        return self.out_proj(op, kernel(op, q, k, v, self.heads, self.scale, bias))


class FeedForward(nn.Module):
    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.intermediate_dense = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.output_dense = Linear(cfg.intermediate_size, cfg.hidden_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.output_dense(op, activation(op, self.act, self.intermediate_dense(op, x)))


class SpeechLayer(nn.Module):
    """Post-norm: x = layer_norm(x + attention(x)); x = final_layer_norm(x + ff(x))."""

    attention_cls = SpeechAttention

    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = self.attention_cls(cfg, dtype)
        self.layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.feed_forward = FeedForward(cfg, dtype)
        self.final_layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, bias=None):
        x = self.layer_norm(op, op.Add(x, self.attention(op, x, kernel, bias)))
        return self.final_layer_norm(op, op.Add(x, self.feed_forward(op, x)))


class PreNormSpeechLayer(SpeechLayer):
    """Pre-norm (`do_stable_layer_norm`): x += attention(layer_norm(x)); x += ff(final_norm(x))."""

    def forward(self, op, x, kernel, bias=None):
        x = op.Add(x, self.attention(op, self.layer_norm(op, x), kernel, bias))
        return op.Add(x, self.feed_forward(op, self.final_layer_norm(op, x)))


class SpeechEncoder(nn.Module):
    """The frames (those the mask drops zeroed) + the positional convolution, then the layers
    over the frames the mask keeps; post-norm encoders normalise before the first layer,
    pre-norm ones after the last. `weight_norm`: the checkpoint's names of the positional
    conv's weight norm (None: a plain weight)."""

    layer_cls = SpeechLayer
    pre_norm_layer_cls = PreNormSpeechLayer

    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType, ep, weight_norm):
        super().__init__()
        self.pos_conv_embed = self.make_positions(cfg, dtype, weight_norm)
        self.layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.layers = nn.ModuleList(
            [self.make_layer(cfg, dtype, index) for index in range(cfg.num_hidden_layers)]
        )
        self.pre_norm, self.ep, self.dtype = cfg.stable_layer_norm, ep, dtype

    def make_positions(self, cfg, dtype, weight_norm) -> nn.Module:
        return PositionalConvEmbedding(cfg, dtype, weight_norm)

    def make_layer(self, cfg, dtype, index: int) -> nn.Module:
        layer_cls = self.pre_norm_layer_cls if cfg.stable_layer_norm else self.layer_cls
        return layer_cls(cfg, dtype)

    def attention_bias(self, op, x):
        """What every layer's attention takes as its bias (relative positions), or None."""
        return None

    def expected_fusions(self, plan) -> dict[str, int]:
        # one residual sum more than the layers' two each feeds a norm: frames + positions
        # (post-norm), or the last layer's output (pre-norm)
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, mask):
        """The last hidden state and the hidden states (the first layer's input, then each
        layer's output) a weighted layer sum reads."""
        x = zero_padding(op, x, mask, self.dtype)
        x = op.Add(x, self.pos_conv_embed(op, x))
        if not self.pre_norm:
            x = self.layer_norm(op, x)
        kernel = encoder_attention(op, self.ep, mask, self.dtype)
        bias = self.attention_bias(op, x)
        states = [x]
        for layer in self.layers:
            x = layer(op, x, kernel, bias)
            states.append(x)
        return (self.layer_norm(op, x) if self.pre_norm else x), states


class SpeechBody(nn.Module):
    """Wav2Vec2Model: the feature encoder, projection and encoder."""

    encoder_cls = SpeechEncoder

    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType, ep, weight_norm):
        super().__init__()
        self.feature_extractor = FeatureEncoder(cfg, dtype)
        self.feature_projection = self.make_projection(cfg, dtype)
        self.encoder = self.encoder_cls(cfg, dtype, ep, weight_norm)
        self.cfg, self.dtype = cfg, dtype

    def make_projection(self, cfg, dtype) -> nn.Module:
        return FeatureProjection(cfg, dtype)

    def forward(self, op, inputs: AudioInputs):
        """(last hidden state, hidden states, the frames the mask keeps or None)."""
        waveform = inputs.input_values
        if self.dtype != ir.DataType.FLOAT:
            waveform = op.Cast(waveform, to=self.dtype)
        features = op.Transpose(self.feature_extractor(op, waveform), perm=[0, 2, 1])
        mask = None
        if inputs.attention_mask is not None:
            mask = frame_mask(op, self.cfg, inputs.attention_mask, features)
        hidden, states = self.encoder(op, self.feature_projection(op, features), mask)
        return hidden, states, mask


class SpeechEncoderModel(nn.Module):
    """A wav2vec2-layout body under `body_name` and the task's head, with wav2vec2's names.
    `tensors` (the checkpoint's names) say how the positional conv's weight norm is stored."""

    body_cls = SpeechBody
    body_name = "wav2vec2"
    heads = AUDIO_TASKS
    modality = "audio"
    positions_conv = "pos_conv_embed.conv"  # the weight-normalised conv, for its tensor names

    def __init__(self, cfg: AudioEncoderConfig, dtype, ep: ExecutionProvider, task: str, tensors):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        self.cfg, self.task, self.dtype = cfg, task, dtype
        weight_norm = weight_norm_names(tensors, self.positions_conv)
        setattr(self, self.body_name, self.body_cls(cfg, dtype, ep, weight_norm))
        if task == "automatic-speech-recognition":
            if not cfg.vocab_size:
                raise ConfigError("'vocab_size' is missing: the CTC head has a row per token")
            self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, True, dtype)
        elif task == "audio-classification":
            if cfg.use_weighted_layer_sum:
                self.layer_weights = nn.Parameter([cfg.num_hidden_layers + 1], dtype)
            self.projector = Linear(cfg.hidden_size, cfg.classifier_proj_size, True, dtype)
            self.classifier = Linear(cfg.classifier_proj_size, cfg.num_labels, True, dtype)

    @property
    def body(self) -> SpeechBody:
        return getattr(self, self.body_name)

    def forward(self, op, inputs: AudioInputs) -> dict:
        hidden, states, mask = self.body(op, inputs)
        cfg, frames = self.cfg, [BATCH, FRAMES]
        if self.task == "feature-extraction":
            return {"last_hidden_state": (hidden, [*frames, cfg.hidden_size])}
        if self.task == "automatic-speech-recognition":
            return {"logits": (self.lm_head(op, hidden), [*frames, cfg.vocab_size])}
        if cfg.use_weighted_layer_sum:
            hidden = self.weighted_sum(op, states)
        pooled = mean_over_frames(op, self.projector(op, hidden), mask, self.dtype)
        return {"logits": (self.classifier(op, pooled), [BATCH, cfg.num_labels])}

    def weighted_sum(self, op, states):
        """The hidden states summed with the softmax of `layer_weights`."""
        weights = op.Softmax(self.layer_weights, axis=0)
        stacked = op.Concat(*(op.Unsqueeze(s, [0]) for s in states), axis=0)
        return op.ReduceSum(op.Mul(stacked, op.Unsqueeze(weights, [1, 2, 3])), [0], keepdims=0)


def mean_over_frames(op, x, mask, dtype: ir.DataType):
    """The mean of x [batch, frames, size] over the frames `mask` keeps (all, without one)."""
    if mask is None:
        return op.ReduceMean(x, [1], keepdims=0)
    kept = op.Unsqueeze(op.Cast(mask, to=dtype), [2])
    total = op.ReduceSum(op.Mul(x, kept), [1], keepdims=0)
    return op.Div(total, op.ReduceSum(kept, [1], keepdims=0))

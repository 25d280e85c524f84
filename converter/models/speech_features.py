"""What wav2vec2-layout speech encoders make of the waveform before their transformer: the
convolutional feature encoder, the frames each row's attention mask keeps, the feature
projection and the positional convolution. Module paths are the checkpoints' names
(`wav2vec2.feature_extractor.conv_layers.0.conv.weight`)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.conv import Conv1d, WeightNormConv1d
from converter.config.audio import AudioEncoderConfig, ConvLayer

# torch's default: the conv stack's norms and data2vec's positional norms do not read
# layer_norm_eps
TORCH_NORM_EPS = 1e-5


class ChannelLayerNorm(LayerNorm):
    """LayerNorm over the channels of x [batch, channels, time]."""

    def forward(self, op, x):
        return op.Transpose(super().forward(op, op.Transpose(x, perm=[0, 2, 1])), perm=[0, 2, 1])


class GroupNormPerChannel(nn.Module):
    """GroupNorm with one group per channel: each channel normalised over time."""

    def __init__(self, channels: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([channels], dtype)
        self.bias = nn.Parameter([channels], dtype)

    def forward(self, op, x):
        return op.InstanceNormalization(x, self.weight, self.bias, epsilon=TORCH_NORM_EPS)


class FeatureConvLayer(nn.Module):
    """conv, then (`norm` "group" or "layer") its norm, then the activation."""

    def __init__(
        self, in_channels: int, layer: ConvLayer, norm: str | None, cfg, dtype: ir.DataType
    ):
        super().__init__()
        self.conv = Conv1d(
            in_channels,
            layer.channels,
            layer.kernel,
            dtype,
            stride=layer.stride,
            bias=cfg.conv_bias,
        )
        if norm == "group":
            self.layer_norm = GroupNormPerChannel(layer.channels, dtype)
        elif norm == "layer":
            self.layer_norm = ChannelLayerNorm(layer.channels, TORCH_NORM_EPS, dtype)
        else:
            self.layer_norm = None
        self.act = cfg.feat_extract_activation

    def forward(self, op, x):
        x = self.conv(op, x)
        if self.layer_norm is not None:
            x = self.layer_norm(op, x)
        return activation(op, self.act, x)


class FeatureEncoder(nn.Module):
    """The waveform [batch, samples] -> features [batch, conv_dim, frames]."""

    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType):
        super().__init__()
        layers, channels = [], 1
        for index, layer in enumerate(cfg.conv_layers):
            group = cfg.feat_extract_norm == "group"
            norm = "layer" if not group else "group" if index == 0 else None
            layers.append(FeatureConvLayer(channels, layer, norm, cfg, dtype))
            channels = layer.channels
        self.conv_layers = nn.ModuleList(layers)

    def forward(self, op, input_values):
        x = op.Unsqueeze(input_values, [1])
        for layer in self.conv_layers:
            x = layer(op, x)
        return x


def frame_mask(op, cfg: AudioEncoderConfig, attention_mask, frames):
    """Which of the `frames` ([batch, frames, ...] value) each row keeps: those before the
    feature encoder's output length of the row's sample count (boolean [batch, frames])."""
    lengths = op.ReduceSum(attention_mask, [1], keepdims=0)
    for layer in cfg.conv_layers:
        lengths = op.Add(op.Div(op.Sub(lengths, layer.kernel), layer.stride), 1)
    count = op.Squeeze(op.Shape(frames, start=1, end=2), [0])
    return op.Less(op.Unsqueeze(op.Range(0, count, 1), [0]), op.Unsqueeze(lengths, [1]))


def zero_padding(op, x, mask, dtype: ir.DataType):
    """x [batch, frames, hidden] with the frames `mask` drops set to zero."""
    return x if mask is None else op.Mul(x, op.Unsqueeze(op.Cast(mask, to=dtype), [2]))


class FeatureProjection(nn.Module):
    """(`norm`) LayerNorm over the conv features, then `projection` to the hidden size."""

    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType, norm: bool = True):
        super().__init__()
        self.layer_norm = LayerNorm(cfg.conv_dim, cfg.norm_eps, dtype) if norm else None
        self.projection = Linear(cfg.conv_dim, cfg.hidden_size, True, dtype)

    def forward(self, op, features):
        if self.layer_norm is not None:
            features = self.layer_norm(op, features)
        return self.projection(op, features)


class PositionalConvEmbedding(nn.Module):
    """A grouped convolution over time that keeps the frame count (an even kernel's extra
    frame is dropped), then the activation; weight-normalised as the checkpoint stores it
    (`weight_norm`: its (g, v) names, None for a plain weight)."""

    def __init__(self, cfg: AudioEncoderConfig, dtype: ir.DataType, weight_norm, stride: int = 1):
        super().__init__()
        size, kernel = cfg.hidden_size, cfg.pos_conv_kernel
        options = {"stride": stride, "padding": kernel // 2, "groups": cfg.pos_conv_groups}
        if weight_norm is None:
            self.conv = Conv1d(size, size, kernel, dtype, **options)
        else:
            self.conv = WeightNormConv1d(size, size, kernel, dtype, names=weight_norm, **options)
        self.trim = kernel % 2 == 0
        self.act = cfg.feat_extract_activation

    def convolve(self, op, x):
        """[batch, hidden, frames] -> the same, convolved, trimmed and activated."""
        x = self.conv(op, x)
        if self.trim:
            x = op.Slice(x, [0], [-1], [2])
        return activation(op, self.act, x)

    def forward(self, op, hidden):
        return op.Transpose(self.convolve(op, op.Transpose(hidden, perm=[0, 2, 1])), perm=[0, 2, 1])

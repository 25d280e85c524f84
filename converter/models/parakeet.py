"""Parakeet CTC: a FastConformer over mel features. A Conv2d stack subsamples the frames (a
conv, then depthwise and pointwise convs, each strided conv halving time and frequency; the
frames past each row's length zeroed after every conv), a dense layer flattens channels and
frequencies to the hidden size (times sqrt(hidden) with `scale_input`), Conformer blocks with
Transformer-XL relative attention (components/conformer.py) run over the frames the subsampled
mask keeps, and a kernel-1 Conv1d gives the CTC logits."""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.batch_norm import BATCH_NORM_UNUSED
from converter.components.conformer import (
    ConformerBlock,
    frame_mask,
    inverse_frequencies,
    relative_embeddings,
    subsampled_lengths,
)
from converter.components.conv import Conv1d
from converter.components.conv2d import Conv2d, Placeholder
from converter.components.encoder_attention import encoder_attention
from converter.config.conformer import ConformerConfig, ConformerRules
from converter.dtypes import NUMPY_OF
from converter.errors import ConfigError
from converter.registry import Family
from converter.tasks.audio_encoding import FRAMES, AudioInputs
from converter.tasks.encoding import BATCH

CTC = "automatic-speech-recognition"


class ParakeetRules(ConformerRules):
    def read_extra(self, r):
        if r.int("conv_kernel_size") % 2 == 0:
            # transformers pads it (k - 1) / 2 each side: one frame short of the residual
            r.refuse("conv_kernel_size", "Parakeet's depthwise kernel must be odd")
        factor = r.int("subsampling_factor")
        if factor < 2 or factor & (factor - 1):
            r.refuse("subsampling_factor", "a power of two from 2 up is built")
        layers = factor.bit_length() - 1
        kernel, stride = r.int("subsampling_conv_kernel_size"), r.int("subsampling_conv_stride")
        bins = r.int("num_mel_bins")
        # transformers sizes the dense layer as bins // stride^layers: the convs must agree
        convolved = bins
        for _ in range(layers):
            convolved = (convolved + 2 * ((kernel - 1) // 2) - kernel) // stride + 1
        if convolved != bins // stride**layers:
            raise ConfigError(
                f"'num_mel_bins' = {bins} convolves to {convolved} bins, not the "
                f"{bins // stride**layers} the dense layer after the convs reads"
            )
        return {"subsampling_layers": layers, "scale_input": r.bool("scale_input", True)}


class Subsampling(nn.Module):
    """input_features [batch, frames, bins] -> [batch, frames / stride^layers, hidden], and each
    row's frame count after it (int64 [batch])."""

    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType):
        super().__init__()
        size, kernel = cfg.subsampling_channels, cfg.subsampling_kernel
        padding, stride = (kernel - 1) // 2, cfg.subsampling_stride
        strided = {"stride": stride, "padding": padding}
        layers = [Conv2d(1, size, kernel, dtype, **strided), _relu()]
        for _ in range(cfg.extra["subsampling_layers"] - 1):
            depthwise = Conv2d(size, size, kernel, dtype, groups=size, **strided)
            layers += [depthwise, Conv2d(size, size, 1, dtype), _relu()]
        self.layers = nn.ModuleList(layers)
        bins = cfg.mel_bins // stride ** cfg.extra["subsampling_layers"]
        self.linear = Linear(size * bins, cfg.hidden_size, True, dtype)
        self.strided, self.dtype = (kernel, stride, padding), dtype

    def forward(self, op, features, attention_mask):
        x, lengths = op.Unsqueeze(features, [1]), op.ReduceSum(attention_mask, [1], keepdims=0)
        for layer in self.layers:
            x = layer(op, x)
            if not isinstance(layer, Conv2d):
                continue
            if layer.strides != [1, 1]:
                lengths = subsampled_lengths(op, lengths, *self.strided)
            keep = frame_mask(op, x, lengths, axis=2)
            x = op.Mul(x, op.Unsqueeze(op.Cast(keep, to=self.dtype), [1, 3]))
        x = op.Reshape(op.Transpose(x, perm=[0, 2, 1, 3]), [0, 0, -1])
        return self.linear(op, x), lengths


def _relu() -> Placeholder:
    return Placeholder(lambda op, x: op.Relu(x))


class PaddedFramesKernel:
    """The EP's attention kernel with transformers' Parakeet mask: a padded frame is hidden as
    a key and as a query, so a padded query sees every key alike and reads the mean of the
    values. Its query is zeroed and its position scores set to one value, so the mean is
    exact in any dtype; the mask rides on the bias the relative positions give every layer."""

    def __init__(self, op, ep, mask, dtype: ir.DataType):
        self.kernel = encoder_attention(op, ep, None, dtype)
        self.pairs = op.And(op.Unsqueeze(mask, [1, 2]), op.Unsqueeze(mask, [1, 3]))
        self.queries = op.Unsqueeze(op.Cast(mask, to=dtype), [2])
        # half the lowest value: onnxruntime's Attention gives zeros for a row wholly masked
        # at the lowest, where transformers' softmax spreads it evenly
        numpy_type = NUMPY_OF[dtype]
        self.low = op.Constant(value=ir.tensor(np.array(np.finfo(numpy_type).min / 2, numpy_type)))

    def __call__(self, op, q, k, v, heads: int, scale: float, bias):
        q, bias = op.Mul(q, self.queries), op.Where(self.pairs, bias, self.low)
        return self.kernel(op, q, k, v, heads, scale, bias)


class ParakeetEncoder(nn.Module):
    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.subsampling = Subsampling(cfg, dtype)
        self.layers = nn.ModuleList(
            [ConformerBlock(cfg, dtype, (1, 0.5), (1, 1)) for _ in range(cfg.num_hidden_layers)]
        )
        self.scale = math.sqrt(cfg.hidden_size) if cfg.extra["scale_input"] else 1.0
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def forward(self, op, features, attention_mask):
        if self.dtype != ir.DataType.FLOAT:
            features = op.Cast(features, to=self.dtype)
        x, lengths = self.subsampling(op, features, attention_mask)
        if self.scale != 1.0:
            x = op.Mul(x, self.scale)
        mask = frame_mask(op, x, lengths, axis=1)
        keep = op.Unsqueeze(op.Cast(mask, to=self.dtype), [1])
        kernel = PaddedFramesKernel(op, self.ep, mask, self.dtype)
        frames = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        # computed in float32, as transformers does, then in the graph's dtype
        embeddings = relative_embeddings(op, frames, inverse_frequencies(self.cfg.hidden_size))
        positions = op.Cast(embeddings, to=self.dtype)
        for layer in self.layers:
            x = layer(op, x, kernel, positions, keep)
        return x


class ParakeetForCTC(nn.Module):
    """`encoder_cls` under `encoder`, the kernel-1 Conv1d CTC head."""

    heads = (CTC,)
    modality = "audio"
    encoder_cls = ParakeetEncoder

    def __init__(self, cfg: ConformerConfig, dtype, ep, task: str, tensors):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        self.encoder = self.encoder_cls(cfg, dtype, ep)
        self.ctc_head = Conv1d(cfg.hidden_size, cfg.vocab_size, 1, dtype)
        self.cfg = cfg

    def forward(self, op, inputs: AudioInputs) -> dict:
        hidden = self.encoder(op, inputs.input_values, inputs.attention_mask)
        logits = op.Transpose(
            self.ctc_head(op, op.Transpose(hidden, perm=[0, 2, 1])), perm=[0, 2, 1]
        )
        return {"logits": (logits, [BATCH, FRAMES, self.cfg.vocab_size])}


FAMILIES = [
    Family(
        "parakeet_ctc",
        ParakeetForCTC,
        "FastConformer over mel features: Conv2d subsampling (8x), Transformer-XL relative "
        "attention, a convolution module, a Conv1d CTC head",
        ("nvidia/parakeet-ctc-1.1b",),
        rules=ParakeetRules("parakeet_encoder", norm_eps=1e-5, norm_bias=True),
        task=CTC,
        category="audio",
        unused=(BATCH_NORM_UNUSED,),
    ),
]

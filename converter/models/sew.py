"""SEW (squeezed and efficient wav2vec): wav2vec2's feature encoder, then a LayerNorm and (when
the widths differ) a projection, and post-norm layers over frames squeezed `squeeze_factor`
times: average-pooled frames plus a positional convolution of that stride; the attention mask
max-pooled alike. An upsampling projection restores the frame rate (zeros past the last whole
squeeze)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.audio import MAX_KERNEL, AudioRules
from converter.models.speech_encoder import SpeechBody, SpeechEncoder, SpeechEncoderModel
from converter.models.speech_features import PositionalConvEmbedding, zero_padding
from converter.models.wav2vec2 import PRETRAINING_ONLY
from converter.registry import Family


class SEWRules(AudioRules):
    def __init__(self):
        super().__init__(stable_layer_norm=False)

    def read_extra(self, r):
        if r.bool("use_weighted_layer_sum", False):
            r.refuse(
                "use_weighted_layer_sum",
                "SEW's layers run at the squeezed frame rate, which transformers pools with "
                "the lengths of the full rate",
            )
        return {"squeeze_factor": r.int("squeeze_factor", hi=MAX_KERNEL)}


class SEWProjection(nn.Module):
    """SEWModel's own `layer_norm` and (widths differing) `feature_projection`, named in the
    body's scope; `eps` where the LayerNorm has its own (SEW-D's)."""

    def __init__(self, cfg, dtype: ir.DataType, eps: float | None = None):
        super().__init__(name="")
        self.layer_norm = LayerNorm(cfg.conv_dim, cfg.norm_eps if eps is None else eps, dtype)
        projected = cfg.conv_dim != cfg.hidden_size
        self.feature_projection = (
            Linear(cfg.conv_dim, cfg.hidden_size, True, dtype) if projected else None
        )

    def forward(self, op, features):
        x = self.layer_norm(op, features)
        return x if self.feature_projection is None else self.feature_projection(op, x)


class Upsampling(nn.Module):
    """A projection to `squeeze` times the width, the activation, and each frame's row read as
    `squeeze` consecutive frames."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        squeeze = cfg.extra["squeeze_factor"]
        self.projection = Linear(cfg.hidden_size, cfg.hidden_size * squeeze, True, dtype)
        self.act, self.size = cfg.feat_extract_activation, cfg.hidden_size

    def forward(self, op, x):
        return op.Reshape(activation(op, self.act, self.projection(op, x)), [0, -1, self.size])


class StridedPositionalConv(PositionalConvEmbedding):
    """The positional convolution over x [batch, hidden, frames], as SEW feeds it."""

    def forward(self, op, x):
        return self.convolve(op, x)


class Squeezing:
    """What SEW's encoders do around their layers (a mixin of modules holding `pos_conv_embed`,
    `upsample`, `squeeze` and `dtype`): squeeze the frames, squeeze the mask, restore the
    frame rate."""

    def squeeze_frames(self, op, x, mask):
        """x [batch, frames, hidden] (the frames `mask` drops zeroed), average-pooled plus the
        strided positional conv: [batch, squeezed frames, hidden]."""
        channels = op.Transpose(zero_padding(op, x, mask, self.dtype), perm=[0, 2, 1])
        pooled = op.AveragePool(channels, kernel_shape=[self.squeeze], strides=[self.squeeze])
        # the strided conv has at least as many frames as the pooling: both keep the pooling's
        squeezed = op.Shape(pooled, start=2, end=3)
        positions = op.Slice(self.pos_conv_embed(op, channels), [0], squeezed, [2])
        return op.Add(op.Transpose(pooled, perm=[0, 2, 1]), op.Transpose(positions, perm=[0, 2, 1]))

    def squeezed_mask(self, op, mask):
        """A squeezed frame is kept where any of its frames is (max pooling, as transformers)."""
        if mask is None:
            return None
        kept = op.Unsqueeze(op.Cast(mask, to=ir.DataType.FLOAT), [1])
        pooled = op.MaxPool(kept, kernel_shape=[self.squeeze], strides=[self.squeeze])
        return op.Cast(op.Squeeze(pooled, [1]), to=ir.DataType.BOOL)

    def restore_frames(self, op, x, frames):
        """Upsampled back to `frames` (a 1-D shape): zeros past the last whole squeeze."""
        x = self.upsample(op, x)
        missing = op.Sub(frames, op.Shape(x, start=1, end=2))
        return op.Pad(x, op.Concat([0, 0, 0, 0], missing, [0], axis=0))


class SEWEncoder(Squeezing, SpeechEncoder):
    def __init__(self, cfg, dtype, ep, weight_norm):
        super().__init__(cfg, dtype, ep, weight_norm)
        self.upsample = Upsampling(cfg, dtype)
        self.squeeze = cfg.extra["squeeze_factor"]

    def make_positions(self, cfg, dtype, weight_norm):
        return StridedPositionalConv(cfg, dtype, weight_norm, stride=cfg.extra["squeeze_factor"])

    def forward(self, op, x, mask):
        frames = op.Shape(x, start=1, end=2)
        x = self.layer_norm(op, self.squeeze_frames(op, x, mask))
        kernel = encoder_attention(op, self.ep, self.squeezed_mask(op, mask), self.dtype)
        states = [x]
        for layer in self.layers:
            x = layer(op, x, kernel)
            states.append(x)
        return self.restore_frames(op, x, frames), states


class SEWBody(SpeechBody):
    encoder_cls = SEWEncoder

    def make_projection(self, cfg, dtype):
        return SEWProjection(cfg, dtype)


class SEWModel(SpeechEncoderModel):
    body_cls = SEWBody
    body_name = "sew"


FAMILIES = [
    Family(
        "sew",
        SEWModel,
        "wav2vec2's feature encoder; post-norm layers over pooled frames, upsampled back",
        ("asapp/sew-tiny-100k-ft-ls100h", "asapp/sew-mid-100k-ft-ls100h"),
        rules=SEWRules(),
        task="feature-extraction",
        category="audio",
        unused=PRETRAINING_ONLY,
        prefix="sew.",
    ),
]

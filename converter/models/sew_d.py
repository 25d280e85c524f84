"""SEW-D: SEW's squeeze and upsampling (models/sew.py) around DeBERTa-v2's layers (models/
deberta_v2.py): disentangled attention over log-bucketed relative positions and, where
`conv_kernel_size` is set, the convolution joining the first layer's output. The feature
LayerNorm reads `feature_layer_norm_eps`, the layers `layer_norm_eps`; no LayerNorm stands
between the squeezed frames and the first layer."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.encoder_attention import encoder_attention
from converter.models.deberta_v2 import DebertaEncoder, DebertaRules
from converter.models.sew import (
    SEWBody,
    SEWProjection,
    SEWRules,
    Squeezing,
    StridedPositionalConv,
    Upsampling,
)
from converter.models.speech_encoder import SpeechEncoderModel
from converter.models.wav2vec2 import PRETRAINING_ONLY
from converter.registry import Family


class SEWDRules(SEWRules):
    def read_extra(self, r):
        return {
            **super().read_extra(r),
            **DebertaRules().read_extra(r),
            "feature_norm_eps": r.float("feature_layer_norm_eps"),
        }


class SEWDEncoder(Squeezing, nn.Module):
    """The squeezed frames through DeBERTa's encoder (`encoder`), then upsampled."""

    def __init__(self, cfg, dtype: ir.DataType, ep, weight_norm):
        super().__init__()
        self.squeeze = cfg.extra["squeeze_factor"]
        self.pos_conv_embed = StridedPositionalConv(cfg, dtype, weight_norm, stride=self.squeeze)
        self.encoder = DebertaEncoder(cfg, dtype)
        self.upsample = Upsampling(cfg, dtype)
        self.ep, self.dtype = ep, dtype

    def forward(self, op, x, mask):
        """The last hidden state and no per-layer states (SEW refuses a weighted layer sum)."""
        frames = op.Shape(x, start=1, end=2)
        x = self.squeeze_frames(op, x, mask)
        squeezed = self.squeezed_mask(op, mask)
        kernel = encoder_attention(op, self.ep, squeezed, self.dtype)
        # what the convolution keeps: every squeezed frame without a mask
        keep = op.CastLike(1.0, x)
        if squeezed is not None:
            keep = op.Unsqueeze(op.Cast(squeezed, to=self.dtype), [2])
        return self.restore_frames(op, self.encoder(op, x, kernel, keep), frames), []


class SEWDBody(SEWBody):
    encoder_cls = SEWDEncoder

    def make_projection(self, cfg, dtype):
        return SEWProjection(cfg, dtype, eps=cfg.extra["feature_norm_eps"])


class SEWDModel(SpeechEncoderModel):
    body_cls = SEWDBody
    body_name = "sew_d"


FAMILIES = [
    Family(
        "sew-d",
        SEWDModel,
        "SEW's squeezed frames through DeBERTa-v2 layers (disentangled relative attention, "
        "optional convolution after the first layer), upsampled back",
        ("asapp/sew-d-tiny-100k-ft-ls100h", "asapp/sew-d-mid-400k-ft-ls100h"),
        rules=SEWDRules(),
        task="feature-extraction",
        category="audio",
        unused=PRETRAINING_ONLY,
        prefix="sew_d.",
    ),
]

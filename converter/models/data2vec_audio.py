"""Data2Vec-Audio: wav2vec2's layout (models/speech_encoder.py) with a LayerNorm after every
conv of the feature encoder, post-norm layers, and positions from a stack of plain grouped
convolutions, each followed by a LayerNorm without weights and the activation."""

from __future__ import annotations

from onnxscript import nn

from converter.components import activation
from converter.components.conv import Conv1d
from converter.config.audio import AudioRules
from converter.config.reader import MAX_LAYERS
from converter.models.speech_encoder import SpeechBody, SpeechEncoder, SpeechEncoderModel
from converter.models.speech_features import TORCH_NORM_EPS, ChannelLayerNorm
from converter.models.wav2vec2 import PRETRAINING_ONLY
from converter.registry import Family


class Data2VecAudioRules(AudioRules):
    """`num_conv_pos_embeddings` counts the positional convs; `conv_pos_kernel_size` is their
    kernel."""

    def __init__(self):
        super().__init__(feat_extract_norm="layer", stable_layer_norm=False)

    def pos_conv_kernel(self, r):
        return r.int("conv_pos_kernel_size")

    def read_extra(self, r):
        return {"pos_conv_layers": r.int("num_conv_pos_embeddings", hi=MAX_LAYERS)}


class PositionalConvLayer(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        size, kernel = cfg.hidden_size, cfg.pos_conv_kernel
        self.conv = Conv1d(
            size, size, kernel, dtype, padding=kernel // 2, groups=cfg.pos_conv_groups
        )
        self.layer_norm = ChannelLayerNorm(size, TORCH_NORM_EPS, dtype, affine=False)
        self.trim, self.act = kernel % 2 == 0, cfg.feat_extract_activation

    def forward(self, op, x):
        x = self.conv(op, x)
        if self.trim:
            x = op.Slice(x, [0], [-1], [2])
        return activation(op, self.act, self.layer_norm(op, x))


class PositionalConvStack(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        count = cfg.extra["pos_conv_layers"]
        self.layers = nn.ModuleList([PositionalConvLayer(cfg, dtype) for _ in range(count)])

    def forward(self, op, hidden):
        x = op.Transpose(hidden, perm=[0, 2, 1])
        for layer in self.layers:
            x = layer(op, x)
        return op.Transpose(x, perm=[0, 2, 1])


class Data2VecAudioEncoder(SpeechEncoder):
    def make_positions(self, cfg, dtype, weight_norm):
        return PositionalConvStack(cfg, dtype)


class Data2VecAudioBody(SpeechBody):
    encoder_cls = Data2VecAudioEncoder


class Data2VecAudioModel(SpeechEncoderModel):
    body_cls = Data2VecAudioBody
    body_name = "data2vec_audio"


FAMILIES = [
    Family(
        "data2vec-audio",
        Data2VecAudioModel,
        "wav2vec2's layout with layer-normalised convs and a stack of positional convolutions",
        ("facebook/data2vec-audio-base-960h",),
        rules=Data2VecAudioRules(),
        task="feature-extraction",
        category="audio",
        unused=PRETRAINING_ONLY,
        prefix="data2vec_audio.",
    ),
]

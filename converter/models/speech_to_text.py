"""Speech2Text (S2T): a speech encoder-decoder over filter-bank features [batch, frames,
input_feat_per_channel x input_channels]. The encoder subsamples them with Conv1d layers of
stride 2 each closed by a GLU over channels, scales by sqrt(d_model) (scale_embedding), adds
fairseq's sinusoids at positions counted over the real frames, then BART's pre-norm layers and
a final layer_norm; the decoder is BART's pre-norm decoder with scaled tokens, the same
sinusoids counted over the non-padding tokens after the past, and lm_head tied to its tokens.

The frames' attention_mask becomes the subsampled one transformers computes (each conv halves
the real length, rounding up) for the encoder's attention and the decoder's cross-attention.
Positions are padding_idx + 1, + 2, ... over what is real and padding_idx (a zero row) at
padding: in the encoder transformers counts the frames whose padding flag (0 real, 1 padded)
differs from pad_token_id, which we follow as it is.
"""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components.conv import Conv1d
from converter.components.encoder_attention import encoder_attention
from converter.components.positions import counted_positions
from converter.components.seq2seq_attention import Steps, decoder_kernels
from converter.config.reader import MAX_POSITIONS, ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.m2m_100 import fairseq_positions
from converter.models.seq2seq import (
    Seq2SeqDecoder,
    Seq2SeqEncoderLayer,
    seq2seq_norm,
)
from converter.models.speech_seq2seq import SpeechSeq2SeqModel
from converter.registry import Family
from converter.tasks.seq2seq import BATCH
from converter.tasks.speech_seq2seq import SPEECH_TASK


class Speech2TextRules(Seq2SeqRules):
    def __init__(self) -> None:
        super().__init__(
            aliases={"max_target_positions": "max_position_embeddings"},
            pre_norm=True,
            embedding_norm=False,
            position_kind="sinusoidal",
            position_offset=0,
        )

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        if cfg.pad_token_id is None:
            raise ConfigError("'pad_token_id' is missing: Speech2Text's positions count from it")
        if cfg.d_model % 2:
            raise ConfigError(f"'d_model' = {cfg.d_model}: its sinusoids need an even width")
        return cfg

    def read_extra(self, r: ConfigReader) -> dict:
        layers = r.int("num_conv_layers")
        kernels = r.get("conv_kernel_sizes")
        if not isinstance(kernels, list) or len(kernels) != layers:
            raise ConfigError(f"'conv_kernel_sizes' must list {layers} kernel sizes")
        if not all(isinstance(k, int) and k % 2 == 1 for k in kernels):
            # transformers' subsampled lengths assume odd kernels (padding k // 2)
            raise ConfigError(f"'conv_kernel_sizes' = {kernels}: only odd kernel sizes")
        return {
            "features": r.int("input_feat_per_channel") * r.int("input_channels"),
            "conv_channels": r.int("conv_channels"),
            "conv_kernel_sizes": tuple(kernels),
            "max_source_positions": r.int("max_source_positions", hi=MAX_POSITIONS),
        }


class Subsampler(nn.Module):
    """`conv_layers`: Conv1d (stride 2, padding k // 2), each closed by a GLU over channels."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        kernels, mid = cfg.extra["conv_kernel_sizes"], cfg.extra["conv_channels"]
        sizes = [cfg.extra["features"], *[mid // 2] * (len(kernels) - 1)]
        outs = [*[mid] * (len(kernels) - 1), 2 * cfg.d_model]
        self.conv_layers = nn.ModuleList(
            [
                Conv1d(n_in, n_out, k, dtype, stride=2, padding=k // 2)
                for n_in, n_out, k in zip(sizes, outs, kernels, strict=True)
            ]
        )

    def forward(self, op, features):
        x = op.Transpose(features, perm=[0, 2, 1])
        for conv in self.conv_layers:
            value, gate = op.Split(conv(op, x), axis=1, num_outputs=2, _outputs=2)
            x = op.Mul(value, op.Sigmoid(gate))
        return op.Transpose(x, perm=[0, 2, 1])


def subsampled_mask(op, attention_mask, frames, convs: int):
    """transformers' feature-vector mask: 1 before each row's real length, halved (rounding up)
    by each conv, over the `frames` [1] the convolutions make."""
    length = op.ReduceSum(attention_mask, [1], keepdims=1)  # [batch, 1]
    for _ in range(convs):
        length = op.Add(op.Div(op.Sub(length, 1), 2), 1)
    positions = op.Unsqueeze(op.Range(0, op.Squeeze(frames, [0]), 1), [0])
    return op.Cast(op.Less(positions, length), to=ir.DataType.INT64)


class Speech2TextEncoder(Steps):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.conv = Subsampler(cfg, dtype)
        self.embed_positions = fairseq_positions(cfg, dtype)
        self.layers = nn.ModuleList(
            [Seq2SeqEncoderLayer(cfg, dtype) for _ in range(cfg.encoder_layers)]
        )
        self.layer_norm = seq2seq_norm(cfg, dtype)
        self.cfg, self.scale = cfg, cfg.d_model**0.5 if cfg.scale_embedding else 1.0

    def expected_fusions(self, plan) -> dict[str, int]:
        # every norm reads a residual sum (the first: features + positions)
        sums = len(self.layers) * Seq2SeqEncoderLayer.sublayers + 1
        return {"skip_norms": sums if plan.has(SKIP_NORM) else 0}

    def encode(self, op, features, attention_mask, ep, dtype):
        x = self.conv(op, features)
        if self.scale != 1.0:
            x = op.Mul(x, self.scale)
        frames = op.Shape(x, start=1, end=2)
        convs = len(self.conv.conv_layers)
        mask = subsampled_mask(op, attention_mask, frames, convs)
        # transformers' padding flags (1 - mask) counted where they differ from pad_token_id
        pad = self.cfg.pad_token_id
        real = op.Cast(op.Not(op.Equal(op.Sub(1, mask), pad)), to=ir.DataType.INT64)
        x = op.Add(x, self.embed_positions(op, counted_positions(op, real, pad)))
        kernel = encoder_attention(op, ep, mask, dtype)
        for layer in self.layers:
            x = layer(op, x, kernel)
        return self.layer_norm(op, x)


class Speech2TextDecoder(Seq2SeqDecoder):
    """BART's pre-norm decoder with its own scaled token table and fairseq's sinusoids counted
    over the non-padding tokens after the past."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__(replace(cfg, tie_word_embeddings=False), dtype, layers)

    def make_positions(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return fairseq_positions(cfg, dtype)

    def embed(self, op, input_ids, tokens, start=None):
        pad = self.cfg.pad_token_id
        real = op.Cast(op.Not(op.Equal(input_ids, pad)), to=ir.DataType.INT64)
        positions = self.embed_positions(op, counted_positions(op, real, pad, start))
        return op.Add(self.embed_tokens(op, input_ids), positions)


class Speech2TextBody(Steps):
    """`model`: the encoder and the decoder of one part."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, part: str):
        super().__init__()
        enc, dec = part in ("encoder", "both"), part in ("decoder", "both")
        self.encoder = Speech2TextEncoder(cfg, dtype) if enc else None
        self.decoder = Speech2TextDecoder(cfg, dtype, cfg.decoder_layers) if dec else None

    def encode(self, op, features, attention_mask, ep, dtype):
        return self.encoder(op, "encode", features, attention_mask, ep, dtype)

    def cross_kv(self, op, encoder_hidden_states):
        return self.decoder(op, "cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, self_past, cross, kernels):
        return self.decoder(op, "decode", input_ids, None, self_past, cross, kernels)


class Speech2TextModel(SpeechSeq2SeqModel):
    speech_body_cls = Speech2TextBody
    head_name = "lm_head"

    def encoder_inputs(self, dtype: ir.DataType) -> dict[str, tuple[ir.DataType, list]]:
        """Filter-bank features (float32 in every dtype) and their mask, 1 on real frames
        (right padding, as the feature extractor pads)."""
        frames = [BATCH, "num_frames"]
        return {
            "input_features": (ir.DataType.FLOAT, [*frames, self.cfg.extra["features"]]),
            "attention_mask": (ir.DataType.INT64, frames),
        }

    def _encode(self, op, features, attention_mask):
        if self.dtype != ir.DataType.FLOAT:
            features = op.Cast(features, to=self.dtype)
        return self.body(op, "encode", features, attention_mask, self.ep, self.dtype)

    def _decode(self, op, input_ids, encoder_attention_mask, self_past, cross):
        frames = op.Shape(cross[0][0], start=2, end=3)
        convs = len(self.cfg.extra["conv_kernel_sizes"])
        mask = subsampled_mask(op, encoder_attention_mask, frames, convs)
        kernels = decoder_kernels(op, self.ep, mask, self.dtype)
        hidden, presents = self.body(op, "decode", input_ids, self_past, cross, kernels)
        return self.logits(op, hidden), presents


FAMILIES = [
    Family(
        "speech_to_text",
        Speech2TextModel,
        "speech encoder-decoder over filter-bank features: strided Conv1d + GLU subsampling, "
        "fairseq's sinusoids counted over real frames and tokens, BART's pre-norm layers",
        ("facebook/s2t-small-librispeech-asr",),
        rules=Speech2TextRules(),
        task=SPEECH_TASK,
        category="seq2seq",
        # the sinusoid tables older checkpoints saved (the graph computes them)
        unused=(r"lm_head\.weight", r"model\.(encoder|decoder)\.embed_positions\.weights"),
        prefix="model.",
    ),
]

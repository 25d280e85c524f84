"""Whisper (and distil-whisper, whose decoder keeps 2 of the encoder's 32 layers): a log-mel
encoder (two Conv1d + GELU, the second with stride 2, then the sinusoidal table stored as
`embed_positions.weight`, pre-norm layers and a final layer_norm) and BART's pre-norm decoder
with learned positions read from 0, no embedding scale (transformers' Whisper computes
`embed_scale` and never applies it) and the head `proj_out`, tied to the decoder's tokens by
default. Every attention's k_proj has no bias.

The encoder reads exactly 2 x max_source_positions frames, as transformers insists.
"""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.conv import Conv1d
from converter.components.encoder_attention import encoder_attention
from converter.components.positions import LearnedPositions
from converter.components.seq2seq_attention import Seq2SeqAttention, Steps
from converter.config.reader import MAX_POSITIONS, ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.execution_providers import SKIP_NORM
from converter.models.seq2seq import (
    Seq2SeqDecoder,
    Seq2SeqDecoderLayer,
    Seq2SeqEncoderLayer,
    seq2seq_norm,
)
from converter.models.speech_seq2seq import SpeechSeq2SeqModel
from converter.registry import Family
from converter.tasks.genai_speech import GENAI_DECODER, GENAI_ENCODER
from converter.tasks.seq2seq import BATCH
from converter.tasks.speech_seq2seq import SPEECH_TASK


class WhisperRules(Seq2SeqRules):
    def __init__(self) -> None:
        super().__init__(
            aliases={"max_target_positions": "max_position_embeddings"},
            pre_norm=True,
            embedding_norm=False,
            position_offset=0,
        )

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        # transformers' Whisper never applies the embedding scale it computes
        return replace(super().read(r), scale_embedding=False)

    def read_extra(self, r: ConfigReader) -> dict:
        return {
            "num_mel_bins": r.int("num_mel_bins"),
            "max_source_positions": r.int("max_source_positions", hi=MAX_POSITIONS),
        }


class WhisperAttention(Seq2SeqAttention):
    """BART's projections, k_proj without a bias."""

    def __init__(self, width: int, heads: int, head_dim: int, dtype: ir.DataType):
        super().__init__(width, heads, head_dim, dtype, biases=(True, False, True, True))


class WhisperEncoderLayer(Seq2SeqEncoderLayer):
    attention_cls = WhisperAttention


class WhisperDecoderLayer(Seq2SeqDecoderLayer):
    attention_cls = WhisperAttention


class CrossQuery(WhisperAttention):
    """A cross-attention without its key and value projections: the decoder of the genai
    layout reads the keys and values the encoder graph computed."""

    names = ("q_proj", None, None, "out_proj")

    def __init__(self, width: int, heads: int, head_dim: int, dtype: ir.DataType):
        Steps.__init__(self)
        self.q_proj = Linear(width, heads * head_dim, True, dtype)
        self.out_proj = Linear(heads * head_dim, width, True, dtype)
        self.heads, self.head_dim, self.scale = heads, head_dim, head_dim**-0.5


class CrossKeyValue(WhisperAttention):
    """A cross-attention's key and value projections alone, which the genai layout's encoder
    graph runs."""

    names = (None, "k_proj", "v_proj", None)

    def __init__(self, width: int, heads: int, head_dim: int, dtype: ir.DataType):
        Steps.__init__(self)
        self.k_proj = Linear(width, heads * head_dim, False, dtype)
        self.v_proj = Linear(width, heads * head_dim, True, dtype)
        self.heads, self.head_dim = heads, head_dim


class GenaiDecoderLayer(WhisperDecoderLayer):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.encoder_attn = CrossQuery(cfg.d_model, cfg.decoder_heads, cfg.head_dim, dtype)


class CrossLayer(Steps):
    """What the genai encoder graph reads of one decoder layer."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.encoder_attn = CrossKeyValue(cfg.d_model, cfg.decoder_heads, cfg.head_dim, dtype)

    def key_value(self, op, encoder_hidden_states):
        return self.encoder_attn(op, "key_value", encoder_hidden_states)


class WhisperEncoder(Steps):
    """features [batch, num_mel_bins, 2 x max_source_positions] -> [batch, positions, d_model]."""

    layer_cls = WhisperEncoderLayer

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        d_model, positions = cfg.d_model, cfg.extra["max_source_positions"]
        self.conv1 = Conv1d(cfg.extra["num_mel_bins"], d_model, 3, dtype, padding=1)
        self.conv2 = Conv1d(d_model, d_model, 3, dtype, stride=2, padding=1)
        self.embed_positions = LearnedPositions(positions, d_model, dtype)
        self.layers = nn.ModuleList([self.layer_cls(cfg, dtype) for _ in range(cfg.encoder_layers)])
        self.layer_norm = seq2seq_norm(cfg, dtype)
        self.positions = positions

    def expected_fusions(self, plan) -> dict[str, int]:
        # every norm reads a residual sum (the first: convolutions + positions)
        sums = len(self.layers) * self.layer_cls.sublayers + 1
        return {"skip_norms": sums if plan.has(SKIP_NORM) else 0}

    def encode(self, op, features, kernel):
        x = op.Gelu(self.conv1(op, features))
        x = op.Transpose(op.Gelu(self.conv2(op, x)), perm=[0, 2, 1])
        every = op.Unsqueeze(op.Range(0, self.positions, 1), [0])
        x = op.Add(x, self.embed_positions(op, every))
        for layer in self.layers:
            x = layer(op, x, kernel)
        return self.layer_norm(op, x)


class WhisperDecoder(Seq2SeqDecoder):
    """BART's pre-norm decoder with its own token table whether or not the head is tied."""

    layer_cls = WhisperDecoderLayer

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__(replace(cfg, tie_word_embeddings=False), dtype, layers)


class GenaiDecoder(WhisperDecoder):
    layer_cls = GenaiDecoderLayer


class CrossProjections(Steps):
    """`decoder` in the genai encoder graph: each layer's cross-attention key and value."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__()
        self.layers = nn.ModuleList([CrossLayer(cfg, dtype) for _ in range(layers)])

    def cross_kv(self, op, encoder_hidden_states):
        return [layer(op, "key_value", encoder_hidden_states) for layer in self.layers]


# each part's (encoder, decoder) classes; None: the part has none
PARTS = {
    "encoder": (WhisperEncoder, None),
    "decoder": (None, WhisperDecoder),
    "both": (WhisperEncoder, WhisperDecoder),
    GENAI_ENCODER: (WhisperEncoder, CrossProjections),
    GENAI_DECODER: (None, GenaiDecoder),
}


class WhisperBody(Steps):
    """`model`: the encoder and the decoder of one part."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, part: str):
        super().__init__()
        encoder_cls, decoder_cls = PARTS[part]
        self.encoder = encoder_cls(cfg, dtype) if encoder_cls else None
        self.decoder = decoder_cls(cfg, dtype, cfg.decoder_layers) if decoder_cls else None

    def encode(self, op, features, kernel):
        return self.encoder(op, "encode", features, kernel)

    def cross_kv(self, op, encoder_hidden_states):
        return self.decoder(op, "cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, self_past, cross, kernels):
        return self.decoder(op, "decode", input_ids, None, self_past, cross, kernels)


class WhisperModel(SpeechSeq2SeqModel):
    speech_body_cls = WhisperBody
    parts = tuple(PARTS)
    decoding_parts = ("decoder", "both", GENAI_DECODER)
    genai_whisper = True  # its packages hold onnxruntime-genai's whisper graphs too

    def input_frames(self) -> int:
        """The log-mel frames the encoder reads."""
        return 2 * self.cfg.extra["max_source_positions"]

    def encoder_inputs(self, dtype: ir.DataType) -> dict[str, tuple[ir.DataType, list]]:
        """The log-mel spectrogram, float32 as feature extractors make it in every dtype."""
        dims = [BATCH, self.cfg.extra["num_mel_bins"], self.input_frames()]
        return {"input_features": (ir.DataType.FLOAT, dims)}

    def encode(self, op, features):
        return self(op, "_encode", features)

    def _encode(self, op, features):
        if features.dtype != self.dtype:  # Optimum's float32 (genai's come in the graph's)
            features = op.Cast(features, to=self.dtype)
        kernel = encoder_attention(op, self.ep, None, self.dtype)  # every frame is real
        return self.body(op, "encode", features, kernel)


FAMILIES = [
    Family(
        "whisper",
        WhisperModel,
        "speech encoder-decoder: log-mel convolutions and sinusoidal positions, BART's pre-norm "
        "decoder; also onnxruntime-genai's whisper layout",
        ("openai/whisper-tiny", "distil-whisper/distil-large-v3"),
        rules=WhisperRules(),
        task=SPEECH_TASK,
        category="seq2seq",
        unused=(r"proj_out\.weight",),
        prefix="model.",
    ),
]

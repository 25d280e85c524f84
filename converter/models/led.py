"""LED (Longformer encoder-decoder): BART's post-norm layers with layernorm_embedding and learned
positions without offset (a table per stack: max_encoder_position_embeddings,
max_decoder_position_embeddings), whose encoder attends within a sliding window: each token sees
the real tokens at most attention_window / 2 away.

The encoder pads its tokens to whole windows, as transformers does; the window attention runs in
chunks of w = attention_window / 2 queries, each over the keys of its chunk and the two beside it
(3w keys, a band keeping the 2w + 1 within reach), the chunks as the batch of the encoder
kernel. Longformer's global attention (global_attention_mask, with its query_global /
key_global / value_global projections) is not an input: the graphs attend locally everywhere,
as transformers does when no global_attention_mask is given."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Linear
from converter.components.positions import LearnedPositions
from converter.components.seq2seq_attention import Steps
from converter.config.reader import MAX_POSITIONS, ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.dtypes import NUMPY_OF
from converter.models.seq2seq import Seq2SeqEncoder, Seq2SeqEncoderLayer, Seq2SeqModel
from converter.registry import Family

# copies of the shared table some checkpoints carry (bart.SEQ2SEQ_UNUSED under LED's prefix)
LED_TABLES = (r"(led\.)?(encoder|decoder)\.embed_tokens\.weight", r"(led\.)?shared\.weight")
# Longformer's global-attention projections, which the local-only graphs do not read
GLOBAL_PROJECTIONS = (
    r"(led\.)?encoder\.layers\.\d+\.self_attn\.longformer_self_attn\."
    r"(query|key|value)_global\.(weight|bias)",
)


def neighbourhoods(op, x, w: int):
    """[batch, L, ...] (L whole chunks of w) -> [batch * L / w, 3w, ...]: each chunk's rows
    after those of the chunk before it and before those of the chunk after it (zeros past
    the ends)."""
    length = op.Shape(x, start=1, end=2)
    padded = op.Pad(x, op.Constant(value_ints=[w, w]), None, op.Constant(value_ints=[1]))
    chunk = op.Concat([-1, w], op.Shape(x, start=2), axis=0)
    parts = [
        op.Reshape(op.Slice(padded, [start], op.Add(length, start), [1]), chunk)
        for start in (0, w, 2 * w)
    ]
    return op.Concat(*parts, axis=1)


class WindowKernel:
    """The encoder kernel over chunks of w queries and their 3w neighbouring keys, and the band
    (additive, [1, 1, w, 3w]) that keeps the keys within w of each query; built once per graph
    after `pad` has padded the token mask to whole windows."""

    def __init__(self, ep, dtype: ir.DataType, attention_mask, w: int):
        self.ep, self.dtype, self.mask, self.w = ep, dtype, attention_mask, w
        self.built = None

    def pad(self, op, padding) -> None:
        """The mask padded by `padding` [1] masked tokens, as the encoder pads its tokens."""
        self.mask = op.Pad(self.mask, op.Concat([0, 0, 0], padding, axis=0))

    def kernel_and_band(self, op):
        if self.built is None:
            w, numpy_type = self.w, NUMPY_OF[self.dtype]
            keys = neighbourhoods(op, self.mask, w)
            kernel = encoder_attention(op, self.ep, keys, self.dtype, queries=1)
            query, key = np.arange(w)[:, None], np.arange(3 * w)[None, :]
            reach = (query <= key) & (key <= query + 2 * w)  # key w + i is query i itself
            band = np.where(reach, 0, np.finfo(numpy_type).min).astype(numpy_type)
            self.built = kernel, op.Constant(value=ir.tensor(band[None, None]))
        return self.built


class Projections(nn.Module):
    """Longformer's local query, key and value (`longformer_self_attn`)."""

    def __init__(self, width: int, dtype: ir.DataType):
        super().__init__()
        self.query = Linear(width, width, True, dtype)
        self.key = Linear(width, width, True, dtype)
        self.value = Linear(width, width, True, dtype)

    def forward(self, op, x):
        return self.query(op, x), self.key(op, x), self.value(op, x)


class WindowAttention(Steps):
    """LED's encoder attention: `longformer_self_attn` and `output`, the step `encoder`."""

    def __init__(self, width: int, heads: int, head_dim: int, dtype: ir.DataType):
        super().__init__()
        self.longformer_self_attn = Projections(width, dtype)
        self.output = Linear(width, width, True, dtype)
        self.heads, self.scale = heads, head_dim**-0.5

    def encoder(self, op, x, window: WindowKernel, bias=None):
        """x [batch, L, d] (L whole windows): each token over the keys within w of it."""
        q, k, v = self.longformer_self_attn(op, x)
        kernel, band = window.kernel_and_band(op)
        w = window.w
        chunks = op.Reshape(q, op.Concat([-1, w], op.Shape(q, start=2), axis=0))
        y = kernel(
            op,
            chunks,
            neighbourhoods(op, k, w),
            neighbourhoods(op, v, w),
            self.heads,
            self.scale,
            band,
        )
        return self.output(op, op.Reshape(y, op.Shape(q)))


class LEDEncoderLayer(Seq2SeqEncoderLayer):
    attention_cls = WindowAttention


class LEDEncoder(Seq2SeqEncoder):
    """Tokens and positions (the encoder's table) padded to whole windows, the window layers;
    the real tokens' states."""

    layer_cls = LEDEncoderLayer

    def make_positions(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return LearnedPositions(cfg.extra["encoder_positions"], cfg.d_model, dtype)

    def encode(self, op, input_ids, tokens, window: WindowKernel):
        size = 2 * window.w
        length = op.Shape(input_ids, start=1, end=2)
        padding = op.Mod(op.Sub(size, op.Mod(length, size)), size)
        window.pad(op, padding)
        # the padding's states never reach a real token's: zeros stand in for the pad token's
        x = op.Pad(self.embed(op, input_ids, tokens), op.Concat([0, 0, 0, 0], padding, [0], axis=0))
        for layer in self.layers:
            x = layer(op, x, window)
        return self.finish(op, op.Slice(x, [0], length, [1]))


class LEDModel(Seq2SeqModel):
    body_name = "led"  # LEDForConditionalGeneration's base model
    encoder_cls = LEDEncoder

    def _encode(self, op, input_ids, attention_mask):
        # the encoder builds its window kernel from the token mask
        window = WindowKernel(self.ep, self.dtype, attention_mask, self.cfg.extra["window"] // 2)
        return self.body(op, "encode", input_ids, window)


class LEDRules(Seq2SeqRules):
    """max_decoder_position_embeddings as the (decoder's) max_position_embeddings, the
    encoder's table size and the attention window (one for every layer) into extra."""

    def __init__(self) -> None:
        super().__init__(position_offset=0)

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        r.alias(max_decoder_position_embeddings="max_position_embeddings")
        cfg = super().read(r)
        windows = r.get("attention_window")
        windows = windows if isinstance(windows, list) else [windows] * cfg.encoder_layers
        if len(windows) != cfg.encoder_layers or len(set(windows)) != 1:
            r.refuse("attention_window", "one window for every encoder layer is built")
        window = windows[0]
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0 or window % 2:
            r.refuse("attention_window", "a positive even window is built (as transformers)")
        extra = {
            "encoder_positions": r.int("max_encoder_position_embeddings", hi=MAX_POSITIONS),
            "window": window,
        }
        return dataclasses.replace(cfg, extra={**cfg.extra, **extra})


FAMILIES = [
    Family(
        "led",
        LEDModel,
        "Longformer encoder-decoder: BART's post-norm layers, the encoder attending within a "
        "sliding window (local attention only: no global_attention_mask input)",
        ("allenai/led-base-16384", "allenai/led-large-16384-arxiv"),
        rules=LEDRules(),
        task="summarization",
        category="seq2seq",
        unused=(*LED_TABLES, *GLOBAL_PROJECTIONS),
        prefix="led.",
    ),
]

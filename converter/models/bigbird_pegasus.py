"""BigBird-Pegasus: Pegasus' pre-norm encoder-decoder with learned positions (no offset), each
stack's final norm named layernorm_embedding, attention projections with biases per use_bias,
and an encoder whose attention is BigBird's block-sparse pattern (attention_type block_sparse)
or full (original_full).

Block-sparse attention as transformers runs it in eval mode: the tokens padded to whole blocks
of block_size; the first and last query blocks see every key; the others see the first block,
their own block and its two neighbours, and the last block, plus num_random_blocks "random"
blocks, which outside training are all the first block (transformers' random plan is zeros in
eval), so a middle query sees the first block's keys 1 + num_random_blocks times. That multiset
softmax is full attention with log(multiplicity) added to each kept key's score and the other
keys masked; at or below (5 + 2 num_random_blocks) * block_size tokens transformers switches to
full attention, and so does the graph (the bias is then zero). Memory grows with the square of
the length, as full attention's does."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Linear
from converter.components.seq2seq_attention import Seq2SeqAttention, Steps
from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.dtypes import NUMPY_OF
from converter.execution_providers import SKIP_NORM
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.seq2seq import (
    Seq2SeqDecoder,
    Seq2SeqDecoderLayer,
    Seq2SeqEncoder,
    Seq2SeqEncoderLayer,
    Seq2SeqModel,
    seq2seq_norm,
)
from converter.registry import Family

ATTENTION_TYPES = ("block_sparse", "original_full")


class QueryKeyValue(nn.Module):
    def __init__(self, width: int, bias: bool, dtype: ir.DataType):
        super().__init__()
        self.query = Linear(width, width, bias, dtype)
        self.key = Linear(width, width, bias, dtype)
        self.value = Linear(width, width, bias, dtype)

    def forward(self, op, x):
        return self.query(op, x), self.key(op, x), self.value(op, x)


class BigBirdAttention(Steps):
    """The encoder's attention: `self` (query, key, value) and `output`; the step `encoder`
    adds the block-sparse bias the stack passes."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        bias = cfg.extra["use_bias"]
        self.self = QueryKeyValue(cfg.d_model, bias, dtype)
        self.output = Linear(cfg.d_model, cfg.d_model, bias, dtype)
        self.heads, self.scale = cfg.encoder_heads, cfg.head_dim**-0.5

    def encoder(self, op, x, kernel, bias=None):
        q, k, v = self.self(op, x)
        return self.output(op, kernel(op, q, k, v, self.heads, self.scale, bias))


class BigBirdEncoderLayer(Seq2SeqEncoderLayer):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.self_attn = BigBirdAttention(cfg, dtype)
        self.pre_norm = True


class BigBirdDecoderLayer(Seq2SeqDecoderLayer):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        biases = (cfg.extra["use_bias"],) * 4
        heads, head_dim = cfg.decoder_heads, cfg.head_dim
        self.self_attn = Seq2SeqAttention(cfg.d_model, heads, head_dim, dtype, biases)
        self.encoder_attn = Seq2SeqAttention(cfg.d_model, heads, head_dim, dtype, biases)
        self.pre_norm = True


class FinalNormStack:
    """Tokens plus positions, un-normed; the stack's final norm is its layernorm_embedding."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__(cfg, dtype, layers)
        self.layernorm_embedding = seq2seq_norm(cfg, dtype)

    def embed(self, op, input_ids, tokens, start=None):
        x = self.embed_tokens(op, input_ids) if tokens is None else tokens
        return op.Add(x, self.embed_positions(op, self.position_ids(op, input_ids, start)))

    def finish(self, op, x):
        return self.layernorm_embedding(op, x)


def sparse_bias(op, length, padded, cfg: Seq2SeqConfig, dtype: ir.DataType):
    """[1, 1, padded, padded]: log(how often each key block enters a query block's softmax),
    the lowest value where it does not; zeros (full attention) when the `length` [1] tokens
    do not exceed transformers' block-sparse threshold."""
    block, extra = cfg.extra["block_size"], cfg.extra["random_blocks"]
    positions = op.Range(0, op.Squeeze(padded, [0]), 1)
    blocks = op.Div(positions, block)
    last = op.Sub(op.Div(padded, block), 1)
    query, key = op.Unsqueeze(blocks, [1]), op.Unsqueeze(blocks, [0])
    first_key, last_key = op.Equal(key, 0), op.Equal(key, last)
    near = op.LessOrEqual(op.Abs(op.Sub(query, key)), 1)
    near = op.And(near, op.Not(op.Or(first_key, last_key)))
    counts = op.Add(
        op.Add(
            op.Mul(op.Cast(first_key, to=ir.DataType.INT64), 1 + extra),
            op.Cast(near, to=ir.DataType.INT64),
        ),
        op.Cast(last_key, to=ir.DataType.INT64),
    )
    every = op.Or(op.Equal(query, 0), op.Equal(query, last))  # the global query blocks
    counts = op.Where(every, op.Constant(value_int=1), counts)
    numpy_type = NUMPY_OF[dtype]
    low = op.Constant(value=ir.tensor(np.array(np.finfo(numpy_type).min, numpy_type)))
    logs = op.Log(op.Cast(counts, to=dtype))
    bias = op.Where(op.Greater(counts, 0), logs, low)
    sparse = op.Greater(length, (5 + 2 * extra) * block)
    zero = op.Constant(value=ir.tensor(np.array(0, numpy_type)))
    return op.Unsqueeze(op.Where(sparse, bias, zero), [0, 1])


class EncoderMask:
    """The encoder's token mask and what its kernel is built for (the stack pads the mask
    with its tokens to whole blocks first)."""

    def __init__(self, ep, dtype: ir.DataType, attention_mask):
        self.ep, self.dtype, self.mask = ep, dtype, attention_mask


class BigBirdEncoder(FinalNormStack, Seq2SeqEncoder):
    layer_cls = BigBirdEncoderLayer

    def expected_fusions(self, plan) -> dict[str, int]:
        """The norms after the first (which reads the tokens padded to whole blocks) each
        read a residual sum, the final one too."""
        return {"skip_norms": 2 * len(self.layers)} if plan.has(SKIP_NORM) else {}

    def encode(self, op, input_ids, tokens, mask: EncoderMask):
        block = self.cfg.extra["block_size"]
        x = self.embed(op, input_ids, tokens)
        length = op.Shape(x, start=1, end=2)
        padding = op.Mod(op.Sub(block, op.Mod(length, block)), block)
        x = op.Pad(x, op.Concat([0, 0, 0, 0], padding, [0], axis=0))
        padded_mask = op.Pad(mask.mask, op.Concat([0, 0, 0], padding, axis=0))
        kernel = encoder_attention(op, mask.ep, padded_mask, mask.dtype)
        bias = None
        if self.cfg.extra["attention_type"] == "block_sparse":
            padded = op.Shape(x, start=1, end=2)
            bias = sparse_bias(op, length, padded, self.cfg, mask.dtype)
        for layer in self.layers:
            x = layer(op, x, kernel, bias)
        return op.Slice(self.finish(op, x), [0], length, [1])


class BigBirdDecoder(FinalNormStack, Seq2SeqDecoder):
    layer_cls = BigBirdDecoderLayer


class BigBirdPegasusModel(Seq2SeqModel):
    encoder_cls = BigBirdEncoder
    decoder_cls = BigBirdDecoder

    def _encode(self, op, input_ids, attention_mask):
        # the encoder pads the mask with its tokens and builds the kernel over it
        return self.body(op, "encode", input_ids, EncoderMask(self.ep, self.dtype, attention_mask))


class BigBirdPegasusRules(Seq2SeqRules):
    """Pre-norm layers (set by the layer classes: the stacks' final norms are their
    layernorm_embedding); use_bias, attention_type, block_size and num_random_blocks into
    extra."""

    def __init__(self) -> None:
        super().__init__(embedding_norm=False, position_offset=0)

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        kind = r.str("attention_type")
        if kind not in ATTENTION_TYPES:
            r.refuse("attention_type", f"transformers builds {' or '.join(ATTENTION_TYPES)}")
        extra = {
            "use_bias": r.bool("use_bias", False),
            "attention_type": kind,
            "block_size": r.int("block_size"),
            "random_blocks": r.int("num_random_blocks", lo=0),
        }
        return dataclasses.replace(cfg, extra={**cfg.extra, **extra})


FAMILIES = [
    Family(
        "bigbird_pegasus",
        BigBirdPegasusModel,
        "Pegasus with BigBird's block-sparse encoder attention (as transformers runs it in "
        "eval: the random blocks are the first block) as biased full attention, pre-norm, "
        "learned positions",
        ("google/bigbird-pegasus-large-arxiv", "google/bigbird-pegasus-large-pubmed"),
        rules=BigBirdPegasusRules(),
        task="summarization",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

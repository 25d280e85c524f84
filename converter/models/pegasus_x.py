"""Pegasus-X: Pegasus' pre-norm encoder-decoder (bias-free attention projections, fairseq's
[sin | cos] sinusoids computed for any position, no layernorm_embedding) whose encoder runs
block-local attention with global tokens.

The encoder pads its tokens to whole blocks of block_size and adds num_global_tokens learned
global tokens (embed_global). In every layer the global tokens attend to themselves and to every
real token; each token attends to the global tokens and the real tokens of its own block; on
odd layers (stagger_local_blocks) the blocks are shifted by half a block (the tokens padded by
half a block on both sides). Both attentions are plain attention over a padding mask, run by the
cross-attention kernels: the global one over [global tokens; tokens], the local one with the
blocks as the batch, each over [global tokens; its block]. Global and token states share each
layer's projections and feed-forward; each has its own attention norm."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components.embedding import Embedding
from converter.components.linear import Linear
from converter.components.positions import SinusoidalPositions, fairseq_frequencies
from converter.components.seq2seq_attention import (
    FusedCrossAttention,
    Seq2SeqAttention,
    StandardCrossAttention,
    heads_first,
)
from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.seq2seq import (
    Seq2SeqDecoder,
    Seq2SeqDecoderLayer,
    Seq2SeqEncoder,
    Seq2SeqModel,
    feed_forward,
    seq2seq_norm,
)
from converter.registry import Family

NO_BIASES = (False, False, False, False)


class FairseqSinusoids:
    """Positions 0, 1, ... as fairseq's sinusoids (no padding row)."""

    def make_positions(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        return SinusoidalPositions(fairseq_frequencies(cfg.d_model), dtype)


class BlockKernels:
    """The encoder's attention kernels over its token mask [batch, tokens]: (global, local)
    for the layers with blocks in place and for the staggered ones, built once per graph
    after `pad` has padded the mask to whole blocks."""

    def __init__(self, ep, dtype: ir.DataType, attention_mask):
        self.ep, self.dtype, self.mask, self.built = ep, dtype, attention_mask, {}

    def pad(self, op, padding) -> None:
        """The mask padded by `padding` [1] masked tokens, as the encoder pads its tokens."""
        self.mask = op.Pad(self.mask, op.Concat([0, 0, 0], padding, axis=0))

    def pair(self, op, staggered: bool, cfg: Seq2SeqConfig):
        if staggered not in self.built:
            block, tokens = cfg.extra["block_size"], cfg.extra["global_tokens"]
            mask = self.mask
            if staggered:
                half = block // 2
                mask = op.Pad(mask, op.Constant(value_ints=[0, half, 0, half]))
            blocks = op.Reshape(mask, [-1, block])
            kernel = FusedCrossAttention if self.ep.has(ENCODER_MHA) else StandardCrossAttention
            self.built[staggered] = (
                kernel(op, _after_globals(op, mask, tokens), self.dtype),
                kernel(op, _after_globals(op, blocks, tokens), self.dtype),
            )
        return self.built[staggered]


def _after_globals(op, mask, tokens: int):
    """[rows, tokens + keys]: the global tokens' columns (always attended), then `mask`."""
    shape = op.Concat(op.Shape(mask, start=0, end=1), [tokens], axis=0)
    ones = op.Expand(op.Constant(value=ir.tensor(np.array(1, np.int64))), shape)
    return op.Concat(ones, mask, axis=1)


END = np.iinfo(np.int64).max


def globals_and_tokens(op, states, count: int):
    """[batch, count + L, d] -> (the first `count` rows, the others)."""
    return op.Slice(states, [0], [count], [1]), op.Slice(states, [count], [END], [1])


class GlobalLocalAttention(Seq2SeqAttention):
    """Bias-free projections; the step `global_local` runs both of Pegasus-X's attentions."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__(cfg.d_model, cfg.encoder_heads, cfg.head_dim, dtype, NO_BIASES)
        self.block, self.tokens = cfg.extra["block_size"], cfg.extra["global_tokens"]

    def global_local(self, op, states, kernels):
        """The attention output of `states` [batch, G + L, d]: the G global tokens over all of
        them, each of the L tokens (whole blocks) over the global tokens and its block."""
        global_kernel, local_kernel = kernels
        heads, head_dim, width = self.heads, self.head_dim, self.heads * self.head_dim
        q, k, v = self._qkv(op, states)
        global_q, local_q = globals_and_tokens(op, q, self.tokens)
        keys, values = heads_first(op, k, heads, head_dim), heads_first(op, v, heads, head_dim)
        glob = global_kernel(op, global_q, keys, values, heads, self.scale)
        blocks = op.Div(op.Shape(local_q, start=1, end=2), self.block)

        def per_block(x):
            """[batch * blocks, heads, G + block, head_dim]: the global rows, then the block's."""
            global_x, local_x = globals_and_tokens(op, x, self.tokens)
            tiled = op.Expand(op.Unsqueeze(global_x, [1]), op.Concat([1], blocks, [1, 1], axis=0))
            tiled = op.Reshape(tiled, [-1, self.tokens, width])
            own = op.Reshape(local_x, [-1, self.block, width])
            return heads_first(op, op.Concat(tiled, own, axis=1), heads, head_dim)

        blocked_q = op.Reshape(local_q, [-1, self.block, width])
        local = local_kernel(op, blocked_q, per_block(k), per_block(v), heads, self.scale)
        local = op.Reshape(local, op.Shape(local_q))
        return self._proj(3)(op, op.Concat(glob, local, axis=1))


class PegasusXEncoderLayer(nn.Module):
    """Over the state [global tokens; tokens]: each part's attention norm, the global-local
    attention (the tokens padded by half a block on both sides in staggered layers), then
    one feed-forward for both."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, staggered: bool):
        super().__init__()
        self.self_attn = GlobalLocalAttention(cfg, dtype)
        self.self_attn_layer_norm = seq2seq_norm(cfg, dtype)
        self.global_self_attn_layer_norm = seq2seq_norm(cfg, dtype)
        self.fc1 = Linear(cfg.d_model, cfg.encoder_ffn_dim, True, dtype)
        self.fc2 = Linear(cfg.encoder_ffn_dim, cfg.d_model, True, dtype)
        self.final_layer_norm = seq2seq_norm(cfg, dtype)
        self.act, self.staggered, self.cfg = cfg.activation, staggered, cfg

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 2 * int(plan.has(ENCODER_MHA))}

    def forward(self, op, states, kernels: BlockKernels):
        count, half = self.cfg.extra["global_tokens"], self.cfg.extra["block_size"] // 2
        glob, tokens = globals_and_tokens(op, states, count)
        tokens = self.self_attn_layer_norm(op, tokens)
        if self.staggered:
            tokens = op.Pad(tokens, op.Constant(value_ints=[0, half, 0, 0, half, 0]))
        normed = op.Concat(self.global_self_attn_layer_norm(op, glob), tokens, axis=1)
        pair = kernels.pair(op, self.staggered, self.cfg)
        out = self.self_attn(op, "global_local", normed, pair)
        if self.staggered:
            kept = op.Slice(out, [count + half], [-half], [1])
            out = op.Concat(op.Slice(out, [0], [count], [1]), kept, axis=1)
        states = op.Add(states, out)
        return op.Add(states, feed_forward(op, self, self.final_layer_norm(op, states)))


class PegasusXEncoder(FairseqSinusoids, Seq2SeqEncoder):
    """Tokens (scaled) plus positions, padded to whole blocks; the global tokens' table
    `embed_global`; the layers (odd ones staggered); the real tokens' states, normed."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__(cfg, dtype, layers)
        self.embed_global = Embedding(cfg.extra["global_tokens"], cfg.d_model, dtype)

    def make_layer(self, cfg: Seq2SeqConfig, dtype: ir.DataType, index: int):
        return PegasusXEncoderLayer(cfg, dtype, cfg.extra["stagger"] and index % 2 == 1)

    def expected_fusions(self, plan) -> dict[str, int]:
        """Each layer's feed-forward norm reads the residual sum (the attention norms read
        slices of it)."""
        return {"skip_norms": len(self.layers)} if plan.has(SKIP_NORM) else {}

    def encode(self, op, input_ids, tokens, kernels: BlockKernels):
        block = self.cfg.extra["block_size"]
        x = self.embed(op, input_ids, tokens)
        length = op.Shape(x, start=1, end=2)
        padding = op.Mod(op.Sub(block, op.Mod(length, block)), block)
        x = op.Pad(x, op.Concat([0, 0, 0, 0], padding, [0], axis=0))
        kernels.pad(op, padding)
        count = self.cfg.extra["global_tokens"]
        rows = self.embed_global(op, op.Constant(value=ir.tensor(np.arange(count, dtype=np.int64))))
        batch = op.Concat(op.Shape(x, start=0, end=1), [1, 1], axis=0)
        states = op.Concat(op.Expand(op.Unsqueeze(rows, [0]), batch), x, axis=1)
        for layer in self.layers:
            states = layer(op, states, kernels)
        return self.finish(op, op.Slice(states, [count], op.Add(length, count), [1]))


class PegasusXDecoderLayer(Seq2SeqDecoderLayer):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        heads, head_dim = cfg.decoder_heads, cfg.head_dim
        self.self_attn = Seq2SeqAttention(cfg.d_model, heads, head_dim, dtype, NO_BIASES)
        self.encoder_attn = Seq2SeqAttention(cfg.d_model, heads, head_dim, dtype, NO_BIASES)


class PegasusXDecoder(FairseqSinusoids, Seq2SeqDecoder):
    layer_cls = PegasusXDecoderLayer


class PegasusXModel(Seq2SeqModel):
    encoder_cls = PegasusXEncoder
    decoder_cls = PegasusXDecoder

    def _encode(self, op, input_ids, attention_mask):
        # the encoder builds its block kernels from the token mask
        kernels = BlockKernels(self.ep, self.dtype, attention_mask)
        return self.body(op, "encode", input_ids, kernels)


class PegasusXRules(Seq2SeqRules):
    """block_size, num_global_tokens and stagger_local_blocks into extra."""

    def __init__(self) -> None:
        super().__init__(
            pre_norm=True, embedding_norm=False, position_kind="sinusoidal", position_offset=0
        )

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        block = r.int("block_size")
        stagger = r.bool("stagger_local_blocks", True)
        if stagger and block % 2:
            r.refuse("block_size", "staggered blocks shift by half a block, which must be whole")
        extra = {
            "block_size": block,
            "global_tokens": r.int("num_global_tokens"),
            "stagger": stagger,
        }
        return dataclasses.replace(cfg, extra={**cfg.extra, **extra})


FAMILIES = [
    Family(
        "pegasus_x",
        PegasusXModel,
        "Pegasus for long inputs: the encoder's block-local attention with global tokens "
        "(staggered blocks), bias-free attention projections, sinusoidal positions",
        ("google/pegasus-x-large", "google/pegasus-x-base"),
        rules=PegasusXRules(),
        task="summarization",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

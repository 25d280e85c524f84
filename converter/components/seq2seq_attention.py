"""The attention of an encoder-decoder's decoder: self-attention over a growing cache and
cross-attention over the encoder's keys and values, each in two kernels with one contract
(the model picks per EP; encoder self-attention is components/encoder_attention.py's).

Self-attention kernels take q, k, v [batch, sequence, heads * head_dim] of the new tokens and
the layer's past key / value [batch, heads, past, head_dim]; they return the output
[batch, sequence, heads * head_dim] and the presents [batch, heads, past + sequence, head_dim].
Every new token sees all past tokens and the new ones up to itself; decoder rows carry no
padding mask (Optimum and Transformers.js feed none). Cross-attention kernels take q of the new
tokens and the key / value [batch, heads, encoder_sequence, head_dim] computed once from the
encoder output, masked by the encoder's attention mask. Both take an optional additive bias
[1 or batch, heads, sequence, keys] (T5's relative positions).

  standard: opset-23 Attention with an explicit boolean mask (causal over past + new, or the
            encoder's padding), any head size.
  fused:    com.microsoft MultiHeadAttention: `unidirectional` with past_key / past_value and
            present outputs; cross-attention with BNSH key / value and key_padding_mask.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.encoder_attention import (
    MS_DOMAIN,
    StandardEncoderAttention,
    additive_mask,
)
from converter.components.linear import Linear
from converter.execution_providers import ENCODER_MHA


def heads_first(op, x, heads: int, head_dim: int):
    """[batch, sequence, heads * head_dim] -> [batch, heads, sequence, head_dim] (no -1 in the
    shape: the cached steps' cross-attention projects an empty encoder sequence)."""
    return op.Transpose(op.Reshape(x, [0, 0, heads, head_dim]), perm=[0, 2, 1, 3])


def heads_last(op, x):
    """[batch, heads, sequence, head_dim] -> [batch, sequence, heads * head_dim]."""
    return op.Reshape(op.Transpose(x, perm=[0, 2, 1, 3]), [0, 0, -1])


class _Masked:
    """A standard kernel's boolean mask, built once per graph, and its additive form for the
    layers that add a bias."""

    keep = additive = None

    def _additive(self, op, keep):
        if self.additive is None:
            self.additive = additive_mask(op, keep, self.dtype)
        return self.additive


class StandardCachedAttention(_Masked):
    """Causal self-attention over past + new keys in opset-23 Attention. The mask (query i
    sees keys up to past + i) is built from the first layer's past."""

    def __init__(self, dtype: ir.DataType):
        self.dtype = dtype

    def _keep(self, op, q, past_key):
        if self.keep is None:
            past = op.Shape(past_key, start=2, end=3)
            new = op.Shape(q, start=1, end=2)
            queries = op.Range(0, op.Squeeze(new, [0]), 1)
            keys = op.Range(0, op.Squeeze(op.Add(past, new), [0]), 1)
            last = op.Add(op.Unsqueeze(queries, [1]), past)  # the last key each query sees
            self.keep = op.Unsqueeze(op.LessOrEqual(op.Unsqueeze(keys, [0]), last), [0, 1])
        return self.keep

    def __call__(self, op, q, k, v, past_key, past_value, heads: int, scale: float, bias=None):
        keep = self._keep(op, q, past_key)
        mask = keep if bias is None else op.Add(bias, self._additive(op, keep))
        return op.Attention(
            q,
            k,
            v,
            mask,
            past_key,
            past_value,
            q_num_heads=heads,
            kv_num_heads=heads,
            scale=scale,
            _outputs=3,
        )


class FusedCachedAttention:
    def __init__(self, dtype: ir.DataType):
        self.dtype = dtype

    def __call__(self, op, q, k, v, past_key, past_value, heads: int, scale: float, bias=None):
        return op.MultiHeadAttention(
            q,
            k,
            v,
            None,  # bias (the projections add their own)
            None,  # key_padding_mask: decoder rows are unpadded
            bias,  # attention_bias
            past_key,
            past_value,
            num_heads=heads,
            scale=scale,
            unidirectional=1,
            _domain=MS_DOMAIN,
            _version=1,
            _outputs=3,
        )


class StandardCrossAttention(_Masked):
    """Attention of the new tokens over the encoder's keys, masked by its padding (None: every
    encoder position is real, as for speech encoders' fixed-size outputs)."""

    def __init__(self, op, encoder_attention_mask, dtype: ir.DataType):
        # [batch, 1, 1, keys]; onnxruntime wants the query dimension spelled out: the Expand
        # at the first call makes it [batch, 1, queries, keys]
        self.padding = StandardEncoderAttention(op, encoder_attention_mask, dtype, queries=1)
        self.dtype = dtype

    def _keep(self, op, q):
        if self.keep is None and self.padding.keep is not None:
            queries = op.Shape(q, start=1, end=2)
            keys = op.Shape(self.padding.keep, start=3, end=4)
            shape = op.Concat([1, 1], queries, keys, axis=0)
            self.keep = op.Expand(self.padding.keep, shape)
        return self.keep

    def __call__(self, op, q, key, value, heads: int, scale: float, bias=None):
        keep = self._keep(op, q)
        if keep is None:
            mask = bias
        else:
            mask = keep if bias is None else op.Add(bias, self._additive(op, keep))
        y = op.Attention(heads_first(op, q, heads, -1), key, value, mask, scale=scale)
        return heads_last(op, y)


class FusedCrossAttention:
    def __init__(self, op, encoder_attention_mask, dtype: ir.DataType):
        self.key_padding_mask = (
            None
            if encoder_attention_mask is None
            else op.Cast(encoder_attention_mask, to=ir.DataType.INT32)
        )

    def __call__(self, op, q, key, value, heads: int, scale: float, bias=None):
        return op.MultiHeadAttention(
            q,
            key,
            value,
            None,  # bias
            self.key_padding_mask,
            bias,  # attention_bias
            num_heads=heads,
            scale=scale,
            _domain=MS_DOMAIN,
            _version=1,
        )


def decoder_kernels(op, ep, encoder_attention_mask, dtype: ir.DataType):
    """The EP's (self-attention, cross-attention) kernels for every layer of one decoder graph."""
    if ep.has(ENCODER_MHA):
        return FusedCachedAttention(dtype), FusedCrossAttention(op, encoder_attention_mask, dtype)
    return StandardCachedAttention(dtype), StandardCrossAttention(op, encoder_attention_mask, dtype)


class Steps(nn.Module):
    """A module with several entry points: `module(op, "name", *args)` runs its method `name`
    in the module's scope (parameters take their names from the scopes of the calls)."""

    def forward(self, op, step: str, *args, **kwargs):
        return getattr(self, step)(op, *args, **kwargs)


class Seq2SeqAttention(Steps):
    """q/k/v/out projections (BART's names, each with a bias unless `biases` says otherwise)
    and the steps an encoder-decoder runs: `encoder` self-attention, `cached` decoder
    self-attention, and `cross`-attention over the key / value `key_value` computes once.
    A family with other names sets `names`; `scale` None is head_dim ** -0.5."""

    names = ("q_proj", "k_proj", "v_proj", "out_proj")

    def __init__(
        self,
        width: int,
        heads: int,
        head_dim: int,
        dtype: ir.DataType,
        biases: tuple[bool, bool, bool, bool] = (True, True, True, True),
        scale: float | None = None,
        source_width: int | None = None,  # the keys' input width, when not `width`
    ):
        super().__init__()
        inner = heads * head_dim
        sources = (width, source_width or width, source_width or width, inner)
        outs = (inner, inner, inner, width)
        for name, bias, n_in, n_out in zip(self.names, biases, sources, outs, strict=True):
            setattr(self, name, Linear(n_in, n_out, bias, dtype))
        self.heads, self.head_dim = heads, head_dim
        self.scale = head_dim**-0.5 if scale is None else scale

    def _proj(self, index: int):
        return getattr(self, self.names[index])

    def _qkv(self, op, x):
        return (self._proj(i)(op, x) for i in range(3))

    def encoder(self, op, x, kernel, bias=None):
        """Bidirectional self-attention (an encoder_attention kernel)."""
        q, k, v = self._qkv(op, x)
        return self._proj(3)(op, kernel(op, q, k, v, self.heads, self.scale, bias))

    def cached(self, op, x, past_key, past_value, kernel, bias=None):
        """Causal self-attention over the past and the new tokens: (output, present k, v)."""
        q, k, v = self._qkv(op, x)
        y, key, value = kernel(op, q, k, v, past_key, past_value, self.heads, self.scale, bias)
        return self._proj(3)(op, y), key, value

    def key_value(self, op, source):
        """The cross-attention key and value of the encoder output: [batch, heads, len, dim]."""
        key, value = self._proj(1)(op, source), self._proj(2)(op, source)
        return (
            heads_first(op, key, self.heads, self.head_dim),
            heads_first(op, value, self.heads, self.head_dim),
        )

    def cross(self, op, x, key, value, kernel, bias=None):
        q = self._proj(0)(op, x)
        return self._proj(3)(op, kernel(op, q, key, value, self.heads, self.scale, bias))

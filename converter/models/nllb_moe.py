"""NLLB-MoE: M2M-100's layout (pre-norm, a final layer_norm per stack, scaled embeddings,
fairseq's sinusoids counted over the real tokens) under its own names (`cross_attention`,
`ff_layer_norm`, `ffn`), whose feed-forward in layer i is, where (i + 1) % step == 0
(encoder_sparse_step, decoder_sparse_step; none at step 0), a top-2 mixture of experts:
`ffn.router.classifier` and `ffn.experts.expert_{e}.fc1 / fc2` (ReLU, with biases).

Routing as transformers' NllbMoeTop2Router computes it at inference, in float32: the first
expert is the most probable, the second the best logit among the others; their probabilities
are normalized to sum to 1, before or after capacity drops them
(normalize_router_prob_before_dropping). Unless router_ignore_padding_tokens, the encoder's
padding (attention_mask 0) goes to no expert and takes no room in one. An expert takes at
most `capacity` tokens of a call, its first picks before its second picks, each in the
tokens' order (batch rows one after the other) or, with batch_prioritized_routing, by
descending top probability (ties in token order); capacity is
ceil(moe_eval_capacity_token_fraction x the call's tokens, padding included), or
expert_capacity where the fraction is not positive. A token's output is the sum of its kept
experts' outputs times their weights, times 1 - moe_token_dropout (transformers' scaling out
of training). The decoder routes all of its
tokens, as transformers does without a decoder_attention_mask, each call on its own: a
cached decoder routes one step's tokens.

The experts are those of every ungated MoE (switch_transformers.UngatedRoutedMoe): in
com.microsoft.MoE (k=2) where the EP has it, fed the log of the weights (zeros for a token
routed nowhere) and scaled back by their sum; else every expert on every token, weighted.

transformers 5.24's NllbMoeExperts runs expert_1 at the first pick's weight and expert_0 at
the second's whichever experts were picked (it one-hot-encodes the 0/1 first-pick mask as
expert ids); the graph runs the picked experts, as fairseq and transformers 4 did, and the
reference is corrected likewise (converter/validate/reference_fixes.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components.encoder_attention import encoder_attention
from converter.components.experts import PerExpert
from converter.components.mlp import PlainMLP
from converter.components.seq2seq_attention import Seq2SeqAttention, Steps
from converter.config.moe import MAX_EXPERTS, MoeConfig
from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqConfig
from converter.execution_providers import ENCODER_MHA, ExecutionProvider
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.m2m_100 import M2M100Model, M2M100Rules, PaddingAwareStack
from converter.models.seq2seq import (
    Seq2SeqBody,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
    seq2seq_norm,
    sublayer,
)
from converter.models.switch_transformers import ExpertsView, UngatedRoutedMoe
from converter.registry import Family

F32 = ir.DataType.FLOAT


@dataclass(frozen=True)
class NllbMoeSettings:
    """NLLB-MoE's own settings (`cfg.extra["nllb_moe"]`)."""

    experts: int  # num_experts
    router_bias: bool
    encoder_step: int  # layer i is sparse where (i + 1) % step == 0 (none at 0)
    decoder_step: int
    capacity_fraction: float  # moe_eval_capacity_token_fraction; > 0: of the call's tokens
    capacity: int  # expert_capacity, where the fraction is not positive
    route_padding: bool  # router_ignore_padding_tokens: padding routed like any token
    normalize_before_dropping: bool
    prioritized: bool  # batch_prioritized_routing
    token_dropout: float  # moe_token_dropout: outputs scaled by 1 - it


class NllbMoeRules(M2M100Rules):
    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        if r.str("router_dtype") != "float32":
            r.refuse("router_dtype", "routers are computed in float32")
        if r.str("second_expert_policy") != "all":
            r.refuse("second_expert_policy", "only 'all' is deterministic (the others sample)")
        dropout = r.float("moe_token_dropout", positive=False)
        if not 0 <= dropout < 1:
            r.refuse("moe_token_dropout", "a rate in [0, 1) is expected")
        settings = NllbMoeSettings(
            experts=r.int("num_experts", lo=2, hi=MAX_EXPERTS),
            router_bias=r.bool("router_bias", False),
            encoder_step=max(r.int("encoder_sparse_step", lo=-(1 << 30)), 0),
            decoder_step=max(r.int("decoder_sparse_step", lo=-(1 << 30)), 0),
            capacity_fraction=r.float("moe_eval_capacity_token_fraction", positive=False),
            capacity=r.int("expert_capacity", lo=0, hi=1 << 30),
            route_padding=r.bool("router_ignore_padding_tokens", False),
            normalize_before_dropping=r.bool("normalize_router_prob_before_dropping", False),
            prioritized=r.bool("batch_prioritized_routing", False),
            token_dropout=dropout,
        )
        return dataclasses.replace(cfg, extra={**cfg.extra, "nllb_moe": settings})


def is_sparse(index: int, step: int) -> bool:
    """transformers' choice of the sparse layers."""
    return step > 0 and (index + 1) % step == 0


@dataclass(frozen=True)
class FeedForwardView:
    """What PlainMLP reads of a config: fc1 (with bias), the activation, fc2."""

    hidden_size: int
    intermediate_size: int
    activation: str
    mlp_bias: bool = True


def _constant(op, value, numpy_type):
    return op.Constant(value=ir.tensor(np.array(value, numpy_type)))


def _normalized(op, probs, first, second):
    """Each pick's probability over the two picks' sum (floored at float32's eps)."""
    p1 = op.ReduceSum(op.Mul(probs, op.Cast(first, to=F32)), [-1], keepdims=1)
    p2 = op.ReduceSum(op.Mul(probs, op.Cast(second, to=F32)), [-1], keepdims=1)
    total = op.Max(op.Add(p1, p2), _constant(op, np.finfo(np.float32).eps, np.float32))
    return op.Div(p1, total), op.Div(p2, total)


class NllbMoeSparseMLP(UngatedRoutedMoe):
    """The top-2 router and its experts (`experts.expert_{e}.fc1 / fc2`, with biases)."""

    layout = PerExpert(up="fc1", down="fc2", expert="expert_{}")

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, ep: ExecutionProvider, ffn: int):
        s = cfg.extra["nllb_moe"]
        moe = MoeConfig(
            num_experts=s.experts,
            top_k=2,
            expert_size=ffn,
            normalize=True,
            sparse_layers=(),
            router_bias=s.router_bias,
            expert_bias=True,
        )
        super().__init__(ExpertsView(cfg.d_model, cfg.activation, moe), dtype, ep)
        self.settings, self.dtype = s, dtype

    def forward(self, op, x, real):
        """`real` [tokens, 1] (bool): the tokens routed (None: all)."""
        flat = op.Reshape(x, [-1, self.hidden])
        gates = op.Mul(self.gates(op, flat, real), 1.0 - self.settings.token_dropout)
        weights = op.Cast(gates, to=self.dtype)
        if self.kernel:  # the log-weights' softmax over the two picks, scaled back by their sum
            total = op.ReduceSum(gates, [-1], keepdims=1)
            routed = op.Greater(total, _constant(op, 0.0, np.float32))
            log_weights = op.Where(routed, op.Log(weights), op.Mul(weights, 0.0))
            out = self.experts(op, flat, log_weights, normalize=True)
            out = op.Mul(out, op.ReduceSum(weights, [-1], keepdims=1))
        else:
            out = self.experts(op, flat, weights)
        return op.Reshape(out, op.Shape(x))

    def gates(self, op, flat, real):
        """[tokens, experts] float32: each token's weights at its kept first and second pick."""
        s = self.settings
        logits = self.router(op, flat)
        probs = op.Softmax(logits, axis=-1)
        ids = op.Range(0, s.experts, 1)
        first = op.Equal(op.ArgMax(probs, axis=-1, keepdims=1), ids)
        others = op.Where(first, _constant(op, -np.inf, np.float32), logits)
        second = op.Equal(op.ArgMax(others, axis=-1, keepdims=1), ids)
        if s.normalize_before_dropping:
            p1, p2 = _normalized(op, probs, first, second)
        if real is not None:
            first, second = op.And(first, real), op.And(second, real)
        first, second = self.within_capacity(op, probs, first, second)
        if not s.normalize_before_dropping:
            p1, p2 = _normalized(op, probs, first, second)
        return op.Add(op.Mul(p1, op.Cast(first, to=F32)), op.Mul(p2, op.Cast(second, to=F32)))

    def within_capacity(self, op, probs, first, second):
        """The picks an expert has room for: its first picks, then its second picks, in
        token order (or by descending top probability), up to the call's capacity."""
        i64 = ir.DataType.INT64
        ones1, ones2 = op.Cast(first, to=i64), op.Cast(second, to=i64)
        tokens = op.Shape(probs, start=0, end=1)
        if self.settings.prioritized:
            order = op.TopK(op.ReduceMax(probs, [-1], keepdims=0), tokens, axis=0, _outputs=2)[1]
            rank = op.ScatterElements(op.Mul(order, 0), order, op.Range(0, op.Squeeze(tokens), 1))
            count1 = op.Gather(op.CumSum(op.Gather(ones1, order, axis=0), 0), rank, axis=0)
            count2 = op.Gather(op.CumSum(op.Gather(ones2, order, axis=0), 0), rank, axis=0)
        else:
            count1, count2 = op.CumSum(ones1, 0), op.CumSum(ones2, 0)
        # a second pick queues behind all of the expert's first picks
        count2 = op.Add(count2, op.ReduceSum(ones1, [0], keepdims=1))
        capacity = self.capacity(op, tokens)
        return (
            op.And(first, op.LessOrEqual(count1, capacity)),
            op.And(second, op.LessOrEqual(count2, capacity)),
        )

    def capacity(self, op, tokens):
        s = self.settings
        if s.capacity_fraction <= 0:
            return _constant(op, s.capacity, np.int64)
        # in double, as Python's math.ceil(fraction * tokens)
        scaled = op.Mul(
            op.Cast(tokens, to=ir.DataType.DOUBLE), _constant(op, s.capacity_fraction, np.float64)
        )
        return op.Cast(op.Ceil(scaled), to=ir.DataType.INT64)


def feed_forward(cfg: Seq2SeqConfig, dtype, ep, ffn: int, sparse: bool) -> nn.Module:
    if sparse:
        return NllbMoeSparseMLP(cfg, dtype, ep, ffn)
    return PlainMLP(FeedForwardView(cfg.d_model, ffn, cfg.activation), dtype)


class NllbMoeEncoderLayer(nn.Module):
    sublayers = 2

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, ep, sparse: bool):
        super().__init__()
        self.self_attn = Seq2SeqAttention(cfg.d_model, cfg.encoder_heads, cfg.head_dim, dtype)
        self.self_attn_layer_norm = seq2seq_norm(cfg, dtype)
        self.ffn = feed_forward(cfg, dtype, ep, cfg.encoder_ffn_dim, sparse)
        self.ff_layer_norm = seq2seq_norm(cfg, dtype)
        self.sparse = sparse

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: int(plan.has(ENCODER_MHA))}

    def forward(self, op, x, kernel, real):
        def attend(h):
            return self.self_attn(op, "encoder", h, kernel)

        def ffn(h):
            return self.ffn(op, h, real) if self.sparse else self.ffn(op, h)

        x = sublayer(op, x, self.self_attn_layer_norm, attend, True)
        return sublayer(op, x, self.ff_layer_norm, ffn, True)


class NllbMoeDecoderLayer(Steps):
    """Steps: `step` (one decoding step) and `key_value` (its cross-attention cache)."""

    sublayers = 3

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, ep, sparse: bool):
        super().__init__()
        heads, head_dim = cfg.decoder_heads, cfg.head_dim
        self.self_attn = Seq2SeqAttention(cfg.d_model, heads, head_dim, dtype)
        self.self_attn_layer_norm = seq2seq_norm(cfg, dtype)
        self.cross_attention = Seq2SeqAttention(cfg.d_model, heads, head_dim, dtype)
        self.cross_attention_layer_norm = seq2seq_norm(cfg, dtype)
        self.ffn = feed_forward(cfg, dtype, ep, cfg.decoder_ffn_dim, sparse)
        self.ff_layer_norm = seq2seq_norm(cfg, dtype)
        self.sparse = sparse

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 2 * int(plan.has(ENCODER_MHA))}

    def key_value(self, op, encoder_hidden_states):
        return self.cross_attention(op, "key_value", encoder_hidden_states)

    def step(self, op, x, past, cross, kernels):
        self_kernel, cross_kernel = kernels
        presents = []

        def attend(h):
            y, key, value = self.self_attn(op, "cached", h, *past, self_kernel)
            presents.extend((key, value))
            return y

        def attend_encoder(h):
            return self.cross_attention(op, "cross", h, *cross, cross_kernel)

        def ffn(h):
            return self.ffn(op, h, None) if self.sparse else self.ffn(op, h)

        x = sublayer(op, x, self.self_attn_layer_norm, attend, True)
        x = sublayer(op, x, self.cross_attention_layer_norm, attend_encoder, True)
        x = sublayer(op, x, self.ff_layer_norm, ffn, True)
        return x, *presents


class NllbMoeStack:
    """An M2M-100 stack of NLLB-MoE layers, sparse where transformers makes them."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int, ep):
        self.ep = ep
        super().__init__(cfg, dtype, layers)

    def make_layer(self, cfg: Seq2SeqConfig, dtype: ir.DataType, index: int) -> nn.Module:
        step = getattr(cfg.extra["nllb_moe"], f"{self.stack}_step")
        return self.layer_cls(cfg, dtype, self.ep, is_sparse(index, step))


class NllbMoeEncoder(NllbMoeStack, PaddingAwareStack, Seq2SeqEncoder):
    layer_cls, stack = NllbMoeEncoderLayer, "encoder"

    def encode(self, op, input_ids, tokens, kernel, attention_mask):
        x = self.embed(op, input_ids, tokens)
        real = None
        if not self.cfg.extra["nllb_moe"].route_padding:
            real = op.Reshape(op.Cast(attention_mask, to=ir.DataType.BOOL), [-1, 1])
        for layer in self.layers:
            x = layer(op, x, kernel, real)
        return self.finish(op, x)


class NllbMoeDecoder(NllbMoeStack, PaddingAwareStack, Seq2SeqDecoder):
    layer_cls, stack = NllbMoeDecoderLayer, "decoder"


class NllbMoeBody(Seq2SeqBody):
    """The encoder also reads the padding mask (its routers skip padding)."""

    def encode(self, op, input_ids, kernel, attention_mask):
        tokens = self._tokens(op, input_ids)
        return self.encoder(op, "encode", input_ids, tokens, kernel, attention_mask)


class NllbMoeModel(M2M100Model):
    body_cls = NllbMoeBody

    def encoder_cls(self, cfg, dtype, layers):
        return NllbMoeEncoder(cfg, dtype, layers, self.ep)

    def decoder_cls(self, cfg, dtype, layers):
        return NllbMoeDecoder(cfg, dtype, layers, self.ep)

    def _encode(self, op, input_ids, attention_mask):
        kernel = encoder_attention(op, self.ep, attention_mask, self.dtype)
        return self.body(op, "encode", input_ids, kernel, attention_mask)


FAMILIES = [
    Family(
        "nllb-moe",
        NllbMoeModel,
        "M2M-100's layout with top-2 routed mixture-of-experts feed-forwards (ReLU experts "
        "with biases; capacity, batch-prioritized routing and padding skipping as "
        "transformers' router computes them; com.microsoft.MoE on cpu/cuda)",
        ("facebook/nllb-moe-54b",),
        rules=NllbMoeRules(),
        task="translation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

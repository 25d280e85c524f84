"""Switch Transformers: T5's layout (ReLU dense_act_fn, no gating) whose every
`sparse_step`-th feed-forward is a mixture of experts with top-1 routing.

A sparse layer's router (`mlp.router.classifier`, in float32) softmaxes its logits; each token
goes to its most probable expert, whose output (`mlp.experts.expert_{i}`: wi, act, wo) is
weighted by that probability. An expert takes at most expert_capacity tokens of a sequence, in
order (transformers counts the tokens of each call, padding included): later ones skip the
layer, as transformers drops them. (So a cached decoder, one token per call, drops none, as
transformers' own generate(); one teacher-forced pass over more than expert_capacity decoder
tokens may.) Every expert runs on every token in standard ops and the
routing weights, zero but for the kept pick, weight the sum (exact; the experts' cost times
num_experts). Sparse layers are those transformers picks: i % step == 1 (or every layer at
step 1), step = layers // the sparse count (layers itself when it is 0).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqConfig
from converter.models.t5 import (
    T5_UNUSED,
    T5DecoderStack,
    T5DenseActDense,
    T5EncoderStack,
    T5LayerFF,
    T5Model,
    T5Rules,
)
from converter.registry import Family


@dataclass(frozen=True)
class SwitchSettings:
    """Switch Transformers' own settings (`cfg.extra["switch"]`)."""

    experts: int  # num_experts
    capacity: int  # expert_capacity: tokens per expert and sequence
    router_bias: bool
    encoder_step: int  # every how many encoder layers one is sparse
    decoder_step: int


class SwitchRules(T5Rules):
    def __init__(self) -> None:
        super().__init__(scaled="tied")

    def feed_forward(self, r: ConfigReader) -> tuple[str, bool]:
        return r.str("dense_act_fn"), False

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        cfg = super().read(r)
        if r.str("router_dtype") != "float32":
            r.refuse("router_dtype", "routers are computed in float32")
        settings = SwitchSettings(
            experts=r.int("num_experts"),
            capacity=r.int("expert_capacity", lo=0),
            router_bias=r.bool("router_bias", False),
            encoder_step=_step(cfg.encoder_layers, r.int("num_sparse_encoder_layers", lo=0)),
            decoder_step=_step(cfg.decoder_layers, r.int("num_sparse_decoder_layers", lo=0)),
        )
        return dataclasses.replace(cfg, extra={**cfg.extra, "switch": settings})


def _step(layers: int, sparse: int) -> int:
    return layers // sparse if sparse > 0 else layers


def is_sparse(index: int, step: int) -> bool:
    """transformers' choice of the sparse layers."""
    return step > 0 and (index % step == 1 or step == 1)


class RouterClassifier(nn.Module):
    """The router's projection, in float32 whatever the graph's dtype (as transformers runs
    it) and never quantized: a flipped pick is no small rounding error."""

    keeps_float = True

    def __init__(self, cfg: Seq2SeqConfig, s: SwitchSettings, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([s.experts, cfg.d_model], dtype)
        self.bias = nn.Parameter([s.experts], dtype) if s.router_bias else None

    def forward(self, op, x):
        f32 = ir.DataType.FLOAT
        weight = op.Cast(op.Transpose(self.weight, perm=[1, 0]), to=f32)
        logits = op.MatMul(op.Cast(x, to=f32), weight)
        return logits if self.bias is None else op.Add(logits, op.Cast(self.bias, to=f32))


class SwitchRouter(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig, s: SwitchSettings, dtype: ir.DataType):
        super().__init__()
        self.classifier = RouterClassifier(cfg, s, dtype)
        self.settings, self.dtype = s, dtype

    def forward(self, op, x):
        """[batch, sequence, experts]: each token's probability at its kept pick, else 0."""
        probs = op.Softmax(self.classifier(op, x), axis=-1)
        picked = op.ArgMax(probs, axis=-1, keepdims=1)  # the first best, as torch.argmax
        experts = op.Range(0, self.settings.experts, 1)
        chosen = op.Equal(picked, experts)
        order = op.CumSum(op.Cast(chosen, to=ir.DataType.INT64), op.Constant(value_int=1))
        kept = op.And(chosen, op.LessOrEqual(order, self.settings.capacity))
        best = op.ReduceMax(probs, [-1], keepdims=1)
        weights = op.Mul(op.Cast(kept, to=ir.DataType.FLOAT), best)
        return weights if self.dtype == ir.DataType.FLOAT else op.Cast(weights, to=self.dtype)


class SwitchExperts(nn.Module):
    """`expert_{i}`: wi, act, wo each."""

    def __init__(self, cfg: Seq2SeqConfig, s: SwitchSettings, dtype: ir.DataType):
        super().__init__()
        self.count = s.experts
        for i in range(s.experts):
            setattr(self, f"expert_{i}", T5DenseActDense(cfg, dtype))

    def forward(self, op, x, weights):
        out = None
        for i in range(self.count):
            weight = op.Slice(weights, [i], [i + 1], [-1])
            y = op.Mul(getattr(self, f"expert_{i}")(op, x), weight)
            out = y if out is None else op.Add(out, y)
        return out


class SwitchSparseMLP(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        s = cfg.extra["switch"]
        self.router = SwitchRouter(cfg, s, dtype)
        self.experts = SwitchExperts(cfg, s, dtype)

    def forward(self, op, x):
        return self.experts(op, x, self.router(op, x))


class SwitchLayerFF(T5LayerFF):
    mlp_name = "mlp"

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, sparse: bool):
        self.sparse = sparse
        super().__init__(cfg, dtype)

    def make_mlp(self, cfg: Seq2SeqConfig, dtype: ir.DataType) -> nn.Module:
        return SwitchSparseMLP(cfg, dtype) if self.sparse else T5DenseActDense(cfg, dtype)


def _switch_ff(stack, cfg: Seq2SeqConfig, dtype: ir.DataType, index: int) -> nn.Module:
    s = cfg.extra["switch"]
    step = s.decoder_step if stack.decoder else s.encoder_step
    return SwitchLayerFF(cfg, dtype, is_sparse(index, step))


class SwitchEncoderStack(T5EncoderStack):
    ff = _switch_ff


class SwitchDecoderStack(T5DecoderStack):
    ff = _switch_ff


class SwitchTransformersModel(T5Model):
    encoder_cls = SwitchEncoderStack
    decoder_cls = SwitchDecoderStack


FAMILIES = [
    Family(
        "switch_transformers",
        SwitchTransformersModel,
        "T5's layout with top-1 routed mixture-of-experts feed-forwards (expert capacity "
        "honoured per call; experts run densely in standard ops)",
        ("google/switch-base-8",),
        rules=SwitchRules(),
        task="text2text-generation",
        category="seq2seq",
        unused=T5_UNUSED,
    ),
]

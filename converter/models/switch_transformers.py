"""Switch Transformers: T5's layout (ReLU dense_act_fn, no gating) whose every
`sparse_step`-th feed-forward is a mixture of experts with top-1 routing.

A sparse layer's router (`mlp.router.classifier`, in float32) softmaxes its logits; each token
goes to its most probable expert, whose output (`mlp.experts.expert_{i}`: wi, act, wo) is
weighted by that probability. An expert takes at most expert_capacity tokens of a sequence, in
order (transformers counts the tokens of each call, padding included): later ones skip the
layer, as transformers drops them. (So a cached decoder, one token per call, drops none, as
transformers' own generate(); one teacher-forced pass over more than expert_capacity decoder
tokens may.)

The experts are the shared MoE components' (components/moe.py SparseMoe, components/
experts.py UngatedExperts): on EPs with com.microsoft.MoE (relu and silu experts) the kernel
runs the picked expert, fed the float32 pick as log one-hot (weight exactly 1 whatever its
normalization); the kept pick's probability, zero past capacity, then scales its output. So
capacity holds exactly on every call, cached one-token steps included (where, a sequence
giving one token per call, only expert_capacity 0 binds), and the kernel never re-picks in
f16. Elsewhere the dense form runs every expert on every token, weighted by the same
routing weights (exact; the experts' cost times num_experts).

Sparse layers are those transformers picks: i % step == 1 (or every layer at step 1),
step = layers // the sparse count (layers itself when it is 0).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components.experts import PerExpert, UngatedExperts
from converter.components.moe import Router, SparseMoe
from converter.config.moe import MAX_EXPERTS, MoeConfig
from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqConfig
from converter.execution_providers import MOE, ExecutionProvider
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
            experts=r.int("num_experts", lo=1, hi=MAX_EXPERTS),
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


@dataclass(frozen=True)
class ExpertsView:
    """What SparseMoe and its parts read of a config."""

    hidden_size: int
    activation: str
    moe: MoeConfig


class Float32Router(Router):
    """The router's projection in float32 whatever the graph's dtype (transformers'
    router_dtype); as every Router, never quantized."""

    def forward(self, op, flat):
        f32 = ir.DataType.FLOAT
        weight = op.Cast(op.Transpose(self.weight, perm=[1, 0]), to=f32)
        logits = op.MatMul(op.Cast(flat, to=f32), weight)
        return logits if self.bias is None else op.Add(logits, op.Cast(self.bias, to=f32))


class SwitchRouter(nn.Module):
    """`classifier`: the router's projection."""

    def __init__(self, view: ExpertsView, dtype: ir.DataType):
        super().__init__()
        self.classifier = Float32Router(view, dtype)

    def forward(self, op, flat):
        return self.classifier(op, flat)


class UngatedRoutedMoe(SparseMoe):
    """`router.classifier` (float32) over ungated experts (UngatedExperts) under `experts`:
    what Switch Transformers and NLLB-MoE share; each routes its own way."""

    router_name = "router"
    router_cls = SwitchRouter
    experts_cls = UngatedExperts

    def kernel_refused(self, cfg, activation: str) -> str | None:
        if not self.ep.has(MOE):
            return f"{self.ep.name} has no MoE kernel"
        if cfg.activation not in UngatedExperts.kernel_activations:
            return f"experts activated by {cfg.activation}, which the MoE kernel approximates"
        return self.ep.moe_unsupported_reason(activation, int4=False)

    def lowering_notes(self, plan) -> list[str]:
        return self.fallbacks() + super().lowering_notes(plan)


class SwitchSparseMLP(UngatedRoutedMoe):
    """`router.classifier` and `experts.expert_{i}.wi / wo`."""

    layout = PerExpert(up="wi", down="wo", expert="expert_{}")

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, ep: ExecutionProvider):
        s = cfg.extra["switch"]
        moe = MoeConfig(
            num_experts=s.experts,
            top_k=1,
            expert_size=cfg.decoder_ffn_dim,
            normalize=False,
            sparse_layers=(),
            router_bias=s.router_bias,
        )
        super().__init__(ExpertsView(cfg.d_model, cfg.activation, moe), dtype, ep)
        self.capacity, self.dtype = s.capacity, dtype

    def forward(self, op, x):
        flat = op.Reshape(x, [-1, self.hidden])
        probs = op.Softmax(self.router(op, flat), axis=-1)  # [T, E], float32
        picked = op.ArgMax(probs, axis=-1, keepdims=1)  # the first best, as torch.argmax
        chosen = op.Equal(picked, op.Range(0, self.moe.num_experts, 1))
        weights = op.Mul(self.within_capacity(op, chosen, x), op.ReduceMax(probs, [-1], keepdims=1))
        if self.kernel:  # picks the one-hot's expert, weight 1; scaled by its own weight after
            one_hot = op.Cast(chosen, to=self.dtype)
            out = self.experts(op, flat, op.Log(one_hot), normalize=True)
            out = op.Mul(out, op.Cast(op.ReduceSum(weights, [-1], keepdims=1), to=self.dtype))
        else:
            out = self.experts(op, flat, op.Cast(weights, to=self.dtype))
        return op.Reshape(out, op.Shape(x))

    def within_capacity(self, op, chosen, x):
        """[T, E] float32: `chosen` where the token is among the first `capacity` of its
        sequence that picked its expert."""
        experts = self.moe.num_experts
        per_sequence = op.Concat(op.Shape(x, start=0, end=2), [experts], axis=0)
        order = op.CumSum(op.Reshape(op.Cast(chosen, to=ir.DataType.INT64), per_sequence), 1)
        kept = op.And(op.Reshape(chosen, per_sequence), op.LessOrEqual(order, self.capacity))
        return op.Reshape(op.Cast(kept, to=ir.DataType.FLOAT), [-1, experts])


class SwitchLayerFF(T5LayerFF):
    mlp_name = "mlp"

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, sparse: bool, ep):
        self.sparse, self.ep = sparse, ep
        super().__init__(cfg, dtype)

    def make_mlp(self, cfg: Seq2SeqConfig, dtype: ir.DataType) -> nn.Module:
        if self.sparse:
            return SwitchSparseMLP(cfg, dtype, self.ep)
        return T5DenseActDense(cfg, dtype)


class SwitchStack:
    """A T5 stack whose feed-forwards are SwitchLayerFF (the EP picks the experts' form)."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int, ep):
        self.ep = ep
        super().__init__(cfg, dtype, layers)

    def ff(self, cfg: Seq2SeqConfig, dtype: ir.DataType, index: int) -> nn.Module:
        s = cfg.extra["switch"]
        step = s.decoder_step if self.decoder else s.encoder_step
        return SwitchLayerFF(cfg, dtype, is_sparse(index, step), self.ep)


class SwitchEncoderStack(SwitchStack, T5EncoderStack):
    pass


class SwitchDecoderStack(SwitchStack, T5DecoderStack):
    pass


class SwitchTransformersModel(T5Model):
    def encoder_cls(self, cfg, dtype, layers):
        return SwitchEncoderStack(cfg, dtype, layers, self.ep)

    def decoder_cls(self, cfg, dtype, layers):
        return SwitchDecoderStack(cfg, dtype, layers, self.ep)


FAMILIES = [
    Family(
        "switch_transformers",
        SwitchTransformersModel,
        "T5's layout with top-1 routed mixture-of-experts feed-forwards (expert capacity "
        "honoured per call; com.microsoft.MoE on cpu/cuda)",
        ("google/switch-base-8",),
        rules=SwitchRules(),
        task="text2text-generation",
        category="seq2seq",
        unused=T5_UNUSED,
    ),
]

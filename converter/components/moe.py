"""A mixture-of-experts block: a router picks each token's top-k experts, whose outputs,
weighted, are summed (plus any shared expert every token runs).

The routing is computed in standard ops as a dense [tokens, experts] weight matrix, zero
but for each token's picks (softmax or sigmoid scores, an optional selection-only correction
bias, grouped top-k, renormalization, routed scaling). On EPs with com.microsoft.MoE the
experts run in that kernel: routing the kernel computes itself (softmax over the logits,
top-k, optional renormalization) gets the logits; any other routing reaches it as
log-weights, whose softmax over the picks renormalizes them, and the output is scaled back by
their sum. Elsewhere the dense form of `Experts` runs (converter/components/experts.py).
"""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components.experts import Experts, PerExpert
from converter.components.linear import Linear
from converter.components.mlp import GatedMLP
from converter.config.moe import SIGMOID
from converter.dtypes import NAME_OF
from converter.execution_providers import MOE, QMOE, ExecutionProvider

# activations the kernels' SwiGLU computes (silu(gate) * up)
_SWIGLU = ("silu", "swish")


class Router(nn.Module):
    """The router's projection `weight` [E, H] (and `bias`), plus a selection-only
    `e_score_correction_bias` [E] where the config has one (DeepSeek-V3's noaux_tc)."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        moe = cfg.moe
        self.weight = nn.Parameter([moe.num_experts, cfg.hidden_size], dtype)
        self.bias = nn.Parameter([moe.num_experts], dtype) if moe.router_bias else None
        correction = nn.Parameter([moe.num_experts], dtype) if moe.correction_bias else None
        self.e_score_correction_bias = correction

    keeps_float = True  # not quantized (int4, int8): a flipped pick is no small rounding error

    def forward(self, op, flat):
        logits = op.MatMul(flat, op.Transpose(self.weight, perm=[1, 0]))
        return logits if self.bias is None else op.Add(logits, self.bias)


def kernel_computes_routing(moe) -> bool:
    """Whether com.microsoft.MoE's own routing (softmax, top-k, optional renormalization)
    is this config's."""
    return (
        moe.scoring != SIGMOID
        and not moe.correction_bias
        and moe.groups == 1
        and moe.routed_scaling == 1.0
    )


def routing_weights(op, router: Router, logits, moe, correction=None, group_best: int = 2):
    """[T, E]: each token's top-k weights at its experts, zero elsewhere. `correction`: a
    selection-only bias [E] kept outside the router (default: the router's own). With groups,
    a group scores the sum of its `group_best` best experts (DeepSeek-V3: 2; V2: 1, its max)."""
    scores = op.Sigmoid(logits) if moe.scoring == SIGMOID else op.Softmax(logits, axis=-1)
    choice = scores
    if correction is None:
        correction = router.e_score_correction_bias
    if correction is not None:
        choice = op.Add(scores, correction)
    if moe.groups > 1:
        choice = _best_groups_only(op, choice, moe, group_best)
    _, picked = op.TopK(choice, [moe.top_k], axis=-1, _outputs=2)
    weights = op.GatherElements(scores, picked, axis=1)
    if moe.normalize:
        weights = op.Div(weights, op.ReduceSum(weights, [-1], keepdims=1))
    if moe.routed_scaling != 1.0:
        weights = op.Mul(weights, moe.routed_scaling)
    return op.ScatterElements(op.Mul(scores, 0.0), picked, weights, axis=1)


def _best_groups_only(op, choice, moe, group_best: int = 2):
    """-inf for the scores outside each token's `topk_groups` best groups (as transformers
    masks them: a corrected score may be negative), a group scoring the sum of its
    `group_best` best experts (DeepSeek-V3's grouped top-k)."""
    per_group = moe.num_experts // moe.groups
    grouped = op.Reshape(choice, [0, moe.groups, per_group])
    best, _ = op.TopK(grouped, [min(group_best, per_group)], axis=-1, _outputs=2)
    group_scores = op.ReduceSum(best, [-1], keepdims=0)
    best_groups, groups = op.TopK(group_scores, [moe.topk_groups], axis=-1, _outputs=2)
    kept = op.ScatterElements(
        op.Mul(group_scores, 0.0), groups, op.Add(op.Mul(best_groups, 0.0), 1.0), axis=1
    )
    mask = op.Reshape(op.Expand(op.Unsqueeze(kept, [2]), [1, 1, per_group]), [0, -1])
    outside = op.Add(op.Mul(choice, 0.0), float("-inf"))
    return op.Where(op.Cast(mask, to=ir.DataType.BOOL), choice, outside)


class SparseMoe(nn.Module):
    """Router (a `router_cls`) under `router_name`, experts under `experts_name` (read through
    `layout`), and a shared expert under `shared_name` when the config has one (gated by a
    sigmoid of `shared_gate_name` when `shared_gated`). With `correction_beside_router`, the
    config's correction bias is the block's own `e_score_correction_bias`, not the router's."""

    router_name, experts_name = "gate", "experts"
    shared_name, shared_gate_name = "shared_expert", "shared_expert_gate"
    shared_gated = False
    layout = PerExpert()
    router_cls = Router
    experts_cls = Experts  # or UngatedExperts
    correction_beside_router = False

    def __init__(self, cfg, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        moe = cfg.moe
        self.moe, self.hidden, self.ep = moe, cfg.hidden_size, ep
        self.fallback = self.kernel_refused(cfg, NAME_OF[dtype])
        setattr(self, self.router_name, self.router_cls(cfg, dtype))
        kernel = ep.has(MOE) and self.fallback is None
        setattr(self, self.experts_name, self.experts_cls(cfg, dtype, self.layout, kernel))
        if moe.shared_size:
            shared_cfg = dataclasses.replace(cfg, intermediate_size=moe.shared_size)
            setattr(self, self.shared_name, GatedMLP(shared_cfg, dtype))
            if self.shared_gated:
                setattr(self, self.shared_gate_name, Linear(cfg.hidden_size, 1, False, dtype))
        if self.correction_beside_router:
            self.e_score_correction_bias = nn.Parameter([moe.num_experts], dtype)

    def kernel_refused(self, cfg, activation: str) -> str | None:
        """Why this layer's experts take the dense form on this EP (None: the MoE kernel)."""
        if not self.ep.has(MOE):
            return f"{self.ep.name} has no MoE kernel"
        if cfg.activation not in _SWIGLU:
            return f"experts activated by {cfg.activation}, the MoE kernel gates with SiLU"
        return self.ep.moe_unsupported_reason(activation, int4=False)

    @property
    def kernel(self) -> bool:
        return getattr(self, self.experts_name).kernel

    def fallbacks(self) -> list[str]:
        if self.kernel or self.ep.name == "default":  # the portable graph wants no kernel
            return []
        return [f"experts in standard ops instead of MoE: {self.fallback}"]

    def lowering_notes(self, plan) -> list[str]:
        """What lowering leaves undone here: int8 experts (no kernel quantizes expert stacks
        dynamically), a MoE kernel whose widths QMoE cannot block."""
        if plan.int8:
            return ["int8: expert weights stay float (only 2-D MatMul weights are quantized)"]
        if plan.int4 is None or not self.kernel or self.quantized(plan):
            return []
        return [
            f"int4: experts stay float in MoE (QMoE needs int4 blocks of "
            f"{plan.int4.block_size} to divide widths {self.hidden} and {self.moe.expert_size})"
        ]

    def expected_fusions(self, plan) -> dict[str, int]:
        if not self.kernel:  # the dense form's two stacks, through DequantizeLinear
            return {"int4_expert_stacks": 2 if plan.int4 is not None else 0}
        return {QMOE if self.quantized(plan) else MOE: 1}

    def quantized(self, plan) -> bool:
        """Whether int4 turns this layer's MoE into QMoE: the EP has it and the block size
        divides both expert widths (else the float MoE stays, and lowering says so). Experts
        a checkpoint holds packed always do (their block sizes were checked on binding)."""
        if plan.int4 is None or not plan.has(QMOE) or not self.kernel:
            return False
        if plan.int4.prequantized:
            return True
        widths = (self.hidden, self.moe.expert_size)
        return all(width % plan.int4.block_size == 0 for width in widths)

    def forward(self, op, x):
        flat = op.Reshape(x, [-1, self.hidden])
        router = getattr(self, self.router_name)
        logits = router(op, flat)
        experts = getattr(self, self.experts_name)
        if self.kernel and self.kernel_routes():
            out = experts(op, flat, logits, normalize=self.moe.normalize)
        else:
            weights = self.route(op, router, logits)
            if self.kernel:
                out = experts(op, flat, op.Log(weights), normalize=True)
                out = op.Mul(out, op.ReduceSum(weights, [-1], keepdims=1))
            else:
                out = experts(op, flat, weights)
        if self.moe.shared_size:
            out = op.Add(out, self._shared(op, flat))
        return op.Reshape(out, op.Shape(x))

    def kernel_routes(self) -> bool:
        """Whether the MoE kernel's own routing is this layer's (a family whose routing
        differs in a way `MoeConfig` does not state overrides this and `route`)."""
        return not self.correction_beside_router and kernel_computes_routing(self.moe)

    def route(self, op, router: Router, logits):
        """Routing weights [T, E]: zero but for each token's picks."""
        beside = self.e_score_correction_bias if self.correction_beside_router else None
        return routing_weights(op, router, logits, self.moe, beside)

    def _shared(self, op, flat):
        out = getattr(self, self.shared_name)(op, flat)
        if not self.shared_gated:
            return out
        gate = getattr(self, self.shared_gate_name)
        return op.Mul(op.Sigmoid(gate(op, flat)), out)

"""Lowering: the EP's passes over one component's graph, and a check that each produced exactly
the fusions the component's modules declare (`expected_fusions(plan)` on any module)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import onnx_ir as ir

from converter.errors import MobiusError
from converter.execution_providers import (
    ENCODER_MHA,
    GATHER_Q4,
    GQA,
    MOE,
    QMOE,
    SKIP_NORM,
    ExecutionProvider,
)
from converter.lowering.int4 import Int4, quantize_embedding, quantize_matmuls
from converter.lowering.moe import quantize_dense_experts, quantize_experts
from converter.lowering.passes import (
    MS_DOMAIN,
    count_ops,
    fold_packed_weights,
    fuse_skip_norms,
    pretranspose,
)
from converter.tasks.base import Component

__all__ = ["MS_DOMAIN", "Int4", "LoweringError", "LoweringReport", "Plan", "count_ops", "lower"]


class LoweringError(MobiusError):
    """A pass did not produce the fusions the EP's graph must have."""


@dataclass(frozen=True)
class Plan:
    """What lowering does to a component: the EP's fusions and the int4 settings (or None)."""

    ep: ExecutionProvider
    int4: Int4 | None = None

    def has(self, fusion: str) -> bool:
        return self.ep.has(fusion)


@dataclass
class LoweringReport:
    """What lowering fused (counted in the graph) and what it deliberately did not."""

    fusions: dict[str, int] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"fusions": dict(self.fusions), "fallbacks": list(self.fallbacks)}

    def merge(self, other: LoweringReport) -> None:
        for name, count in other.fusions.items():
            self.fusions[name] = self.fusions.get(name, 0) + count
        self.fallbacks += [f for f in other.fallbacks if f not in self.fallbacks]


def expected_fusions(module, plan: Plan) -> Counter:
    """The fusions the component's modules declare, summed."""
    counts: Counter = Counter()
    for m in module.modules():
        declare = getattr(m, "expected_fusions", None)
        if declare is not None:
            counts.update(declare(plan))
    return counts


def lower(component: Component, plan: Plan, float_type: ir.DataType) -> LoweringReport:
    """Run the plan's passes on `component` and check each produced what its modules declare."""
    model, module, ep, int4 = component.model, component.module, plan.ep, plan.int4
    fallbacks = getattr(module, "fallbacks", None)
    report = LoweringReport(fallbacks=fallbacks() if fallbacks else [])
    for m in module.modules():
        notes = m.lowering_notes(plan) if hasattr(m, "lowering_notes") else []
        report.fallbacks += [n for n in notes if n not in report.fallbacks]
    report.fusions["packed_tensors"] = fold_packed_weights(model)
    if ep.has(SKIP_NORM):
        report.fusions["skip_norms"] = fuse_skip_norms(model)
    if int4 is not None:
        quantizers: dict = {}  # a tied table is quantized once, for the head and the rows
        heads = {
            m.weight.name
            for m in module.modules()
            if getattr(m, "head", False) and m.weight is not None
        }
        routers = {m.weight.name for m in module.modules() if getattr(m, "keeps_float", False)}
        report.fusions["int4_matmuls"] = quantize_matmuls(
            model, ep, int4, float_type, quantizers, heads, routers
        )
        if ep.has(QMOE):
            report.fusions[QMOE] = quantize_experts(model, ep, int4, float_type)
        stacks = {p.name for m in module.modules() for p in getattr(m, "dense_stacks", ())}
        report.fusions["int4_expert_stacks"] = quantize_dense_experts(
            model, stacks, int4, float_type
        )
        if int4.lm_head and ep.has(GATHER_Q4):
            table = module.embedding_table().name
            report.fusions["int4_embeddings"] = quantize_embedding(
                model, table, int4, float_type, quantizers
            )
    pretranspose(model)
    ops = count_ops(model)
    if ep.has(GQA):
        report.fusions[GQA] = ops[f"{MS_DOMAIN}.{GQA}"]
    if ep.has(MOE):
        report.fusions[MOE] = ops[f"{MS_DOMAIN}.{MOE}"]
    if ops[f"{MS_DOMAIN}.{ENCODER_MHA}"]:
        report.fusions[ENCODER_MHA] = ops[f"{MS_DOMAIN}.{ENCODER_MHA}"]
    expected = expected_fusions(module, plan)
    for name in sorted(set(report.fusions) | set(expected)):
        found, want = report.fusions.get(name, 0), expected.get(name, 0)
        if found != want:
            raise LoweringError(
                f"lowering for {ep.name} expected {want} {name} in the {component.role}, "
                f"found {found}"
            )
    return report

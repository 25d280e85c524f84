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
from converter.lowering.fp8_gqa import fold_fp8_cache_into_gqa, has_float8_cache
from converter.lowering.int4 import Int4, quantize_embedding, quantize_matmuls
from converter.lowering.int8 import quantize_matmuls_int8
from converter.lowering.moe import quantize_dense_experts, quantize_experts
from converter.lowering.packed_qmoe import bind_packed_experts
from converter.lowering.passes import (
    MS_DOMAIN,
    count_ops,
    fold_packed_weights,
    fuse_skip_norms,
    pretranspose,
)
from converter.tasks.base import Component

__all__ = [
    "INT4_MATMULS",
    "INT8_MATMULS",
    "MS_DOMAIN",
    "Int4",
    "LoweringError",
    "LoweringReport",
    "Plan",
    "count_ops",
    "lower",
]


class LoweringError(MobiusError):
    """A pass did not produce the fusions the EP's graph must have."""


INT4_MATMULS = "int4_matmuls"
INT8_MATMULS = "int8_matmuls"
FP8_CACHE_GQA = "fp8_cache_gqa"  # GroupQueryAttention nodes reading a float8 cache themselves


@dataclass(frozen=True)
class Plan:
    """What lowering does to a component: the EP's fusions, the int4 settings (or None), and
    whether weight MatMuls become dynamic int8."""

    ep: ExecutionProvider
    int4: Int4 | None = None
    int8: bool = False

    def has(self, fusion: str) -> bool:
        return self.ep.has(fusion)

    @property
    def quantization(self) -> str | None:
        """ "int4", "int8", or None when weights stay in the activation dtype."""
        if self.int4 is not None:
            return "int4"
        return "int8" if self.int8 else None

    @property
    def matmul_fusion(self) -> str | None:
        """The fusion counting MatMuls whose weights this plan quantizes (None: it keeps them)."""
        return None if self.quantization is None else f"{self.quantization}_matmuls"

    def quantized_matmuls(self, count: int = 1, head: bool = False) -> dict[str, int]:
        """`count` MatMuls by weights, as a module declares them: an LM head's weights are
        quantized by int4 builds unless --int4-head-bits float (int8 keeps heads float)."""
        name = self.matmul_fusion
        if name is None or (head and (self.int4 is None or self.int4.head_bits is None)):
            return {}
        return {name: count}


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
    heads = {
        m.weight.name
        for m in module.modules()
        if getattr(m, "head", False) is True and m.weight is not None  # a flag, not a submodule
    }
    routers = {m.weight.name for m in module.modules() if getattr(m, "keeps_float", False)}
    if plan.int8:
        report.fusions[INT8_MATMULS] = quantize_matmuls_int8(model, heads, routers)
    if int4 is not None:
        quantizers: dict = {}  # a tied table is quantized once, for the head and the rows
        report.fusions[INT4_MATMULS] = quantize_matmuls(
            model, ep, int4, float_type, quantizers, heads, routers
        )
        if ep.has(QMOE) and int4.prequantized:
            report.fusions[QMOE] = bind_packed_experts(model, ep, float_type)
        elif ep.has(QMOE):
            report.fusions[QMOE] = quantize_experts(model, ep, int4, float_type)
        stacks = {p.name for m in module.modules() for p in getattr(m, "dense_stacks", ())}
        report.fusions["int4_expert_stacks"] = quantize_dense_experts(
            model, stacks, int4, float_type
        )
        # (decoders: their token table; encoders keep theirs float)
        if int4.head_bits and ep.has(GATHER_Q4) and hasattr(module, "embedding_table"):
            table = module.embedding_table().name
            report.fusions["int4_embeddings"] = quantize_embedding(
                model, table, int4, float_type, quantizers
            )
    fp8_cache_gqa = ep.gqa_fp8_cache and has_float8_cache(model)
    if fp8_cache_gqa:
        report.fusions[FP8_CACHE_GQA] = fold_fp8_cache_into_gqa(model)
    pretranspose(model)
    ops = count_ops(model)
    if ep.has(GQA):
        report.fusions[GQA] = ops[f"{MS_DOMAIN}.{GQA}"]
    if ep.has(MOE):
        report.fusions[MOE] = ops[f"{MS_DOMAIN}.{MOE}"]
    if ops[f"{MS_DOMAIN}.{ENCODER_MHA}"]:
        report.fusions[ENCODER_MHA] = ops[f"{MS_DOMAIN}.{ENCODER_MHA}"]
    expected = expected_fusions(module, plan)
    if fp8_cache_gqa:  # every GroupQueryAttention reads the float8 cache
        expected[FP8_CACHE_GQA] = report.fusions.get(GQA, 0)
    for name in sorted(set(report.fusions) | set(expected)):
        found, want = report.fusions.get(name, 0), expected.get(name, 0)
        if found != want:
            raise LoweringError(
                f"lowering for {ep.name} expected {want} {name} in the {component.role}, "
                f"found {found}"
            )
    return report

"""The validation report: status, figures against the dtype's thresholds, and its two human
forms (a table for `mobius validate`, one line for `mobius convert` and the bot)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from converter.validate.metrics import Metrics

# A variant may be published with these; "not executed" is labelled as such on the card.
PUBLISHABLE = ("passed", "not executed")

# Picked on the tiny *trained* Llama of examples/ and three scratch variants (94 runs):
# max_abs_diff 3x the worst measured, cosine 1 - 10x the worst gap, top-1 one flipped row
# below the worst; every deliberately broken package fails them. See docs/validation.md.
THRESHOLDS: dict[str, dict[str, float]] = {
    "f32": {"max_abs_diff": 1e-4, "min_cosine": 0.99999, "top1_agreement": 1.0},
    "f16": {"max_abs_diff": 2.5e-2, "min_cosine": 0.9999, "top1_agreement": 0.95},
    "bf16": {"max_abs_diff": 3e-1, "min_cosine": 0.995, "top1_agreement": 0.9},
    "int8": {"min_cosine": 0.95, "top1_agreement": 0.9},
    "int4": {"min_cosine": 0.7, "top1_agreement": 0.7},
}

# a float8 cache (fp8-kv-cache) stores K and V within 6.25 %: no bound on the absolute
# difference, and the looser of these and the dtype's (docs/build-features.md)
FP8_KV_CACHE_THRESHOLDS = {"min_cosine": 0.99, "top1_agreement": 0.9}


def thresholds_of(dtype: str, fp8_kv_cache: bool = False) -> dict[str, float]:
    """The bounds a package of `dtype` is held to, with a float8 KV cache or not."""
    bounds = THRESHOLDS[dtype]
    if not fp8_kv_cache:
        return dict(bounds)
    return {m: min(b, bounds.get(m, b)) for m, b in FP8_KV_CACHE_THRESHOLDS.items()}


@dataclass
class ValidationReport:
    package: str
    ep: str
    dtype: str
    status: str  # "passed" | "failed" | "not executed" | "unverified"
    reference: str | None = None  # "transformers" | "default-f32"
    reason: str | None = None  # why the status is "unverified"
    max_abs_diff: float | None = None
    min_cosine: float | None = None
    top1_agreement: float | None = None
    greedy_match: float | None = None  # leading greedy tokens equal to the reference's
    load_seconds: float | None = None
    tokens_per_second: float | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    structural: dict | None = None
    fallbacks: list[str] = field(default_factory=list)
    # a multi-graph package's intermediate outputs (a VLM's image features, inputs_embeds):
    # component -> {"max_abs_diff", "min_cosine"}
    components: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    def record(self, metrics: Metrics) -> None:
        """Take the figures and fail each one that misses this dtype's threshold."""
        self.max_abs_diff = metrics.max_abs_diff
        self.min_cosine = metrics.min_cosine
        self.top1_agreement = metrics.top1_agreement
        for metric, bound in self.thresholds.items():
            value = getattr(self, metric)
            ok = value <= bound if metric == "max_abs_diff" else value >= bound
            if not ok:
                self.failures.append(f"{metric} {value:.6g} misses the {self.dtype} bound {bound}")

    def record_component(self, component: str, metrics: Metrics) -> None:
        """One component's output against the reference's, held to this dtype's bounds on
        the absolute difference and the cosine."""
        figures = {"max_abs_diff": metrics.max_abs_diff, "min_cosine": metrics.min_cosine}
        self.components[component] = figures
        for metric, value in figures.items():
            bound = self.thresholds.get(metric)
            if bound is None:
                continue
            ok = value <= bound if metric == "max_abs_diff" else value >= bound
            if not ok:
                self.failures.append(
                    f"{component}: {metric} {value:.6g} misses the {self.dtype} bound {bound}"
                )

    def conclude(self, status: str) -> ValidationReport:
        """`status` unless a check failed."""
        self.status = "failed" if self.failures else status
        return self


def format_report(report: ValidationReport) -> str:
    """A short human table."""
    rows = [("package", report.package), ("variant", f"{report.ep} / {report.dtype}")]
    rows.append(("status", report.status.upper()))
    if report.structural is not None:
        rows.append(("structural check", report.structural["status"]))
        rows += [("unsupported op", line) for line in report.structural["unsupported_ops"]]
    if report.max_abs_diff is not None:
        rows += [
            ("reference", report.reference),
            ("max abs diff", f"{report.max_abs_diff:.3g}"),
            ("min cosine", f"{report.min_cosine:.6f}"),
            ("top-1 agreement", f"{report.top1_agreement:.1%}"),
        ]
        if report.greedy_match is not None:  # generation only
            rows.append(("greedy match", f"{report.greedy_match:.1%}"))
        if report.tokens_per_second is not None:
            rows.append(("decode speed", f"{report.tokens_per_second:.1f} tokens/s"))
        rows += [
            (f"{name} max abs diff", f"{figures['max_abs_diff']:.3g}")
            for name, figures in report.components.items()
        ]
        rows.append(("load time", f"{report.load_seconds:.2f} s"))
    if report.reason:
        rows.append(("reason", report.reason))
    rows += [("failed", line) for line in report.failures]
    rows += [("note", line) for line in report.fallbacks]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def component_diffs(report: dict) -> str:
    """A multi-graph package's intermediate outputs' max abs diffs, in one phrase
    ("image_features 2.1e-07, inputs_embeds 0"); "" for a one-graph package."""
    return ", ".join(
        f"{name} {figures['max_abs_diff']:.2g}"
        for name, figures in (report.get("components") or {}).items()
    )


def summarize(report: dict) -> str:
    """One line for a report (as_dict): the status and its evidence."""
    status = report["status"]
    if report.get("max_abs_diff") is not None:
        components = component_diffs(report)
        status += (
            f" (max abs diff {report['max_abs_diff']:.3g}, top-1 {report['top1_agreement']:.1%},"
            f"{' ' + components + ',' if components else ''} vs {report['reference']})"
        )
    details = [*report.get("failures", []), *filter(None, [report.get("reason")])]
    return "; ".join([status, *details])

"""Validation: each task's probe in onnxruntime against a reference, with numbers
(`validate`), and the metrics the parity tests share."""

from converter.validate.report import (
    PUBLISHABLE,
    THRESHOLDS,
    ValidationReport,
    format_report,
    summarize,
)
from converter.validate.validate import DECODE_STEPS, REFERENCE_EXTRA, REFERENCES, validate

__all__ = [
    "DECODE_STEPS",
    "PUBLISHABLE",
    "REFERENCES",
    "REFERENCE_EXTRA",
    "THRESHOLDS",
    "ValidationReport",
    "format_report",
    "summarize",
    "validate",
]

"""Every parity case, gathered from this package's modules (one per converter/models module):
`CASES` maps a case id, `model_type` or `model_type:variant`, to its tiny config."""

from tests.parity.gather import gather_cases

CASES = gather_cases(__name__, __path__, "parity case")


def model_type_of(case: str) -> str:
    return case.split(":")[0]


def is_base(case: str) -> bool:
    """The family's plain case (no `:variant`)."""
    return ":" not in case

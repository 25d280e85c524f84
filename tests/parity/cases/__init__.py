"""Every parity case, gathered from this package's modules (one per converter/models module):
`CASES` maps a case id, `model_type` or `model_type:variant`, to its tiny config."""

import importlib
import pkgutil


def _gather() -> dict[str, dict]:
    cases: dict[str, dict] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, config in module.CASES.items():
            if name in cases:
                raise RuntimeError(f"parity case {name!r} is defined twice")
            cases[name] = config
    return dict(sorted(cases.items()))


CASES = _gather()


def model_type_of(case: str) -> str:
    return case.split(":")[0]


def is_base(case: str) -> bool:
    """The family's plain case (no `:variant`)."""
    return ":" not in case

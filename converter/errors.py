"""Errors the converter raises for bad input; each message names the problem."""

import importlib.util
from collections.abc import Sequence


class MobiusError(Exception):
    """Base class: a problem with the user's input, reported as one clear line."""


class ConfigError(MobiusError):
    """config.json is malformed, inconsistent or absurd; the message names the key."""


class UnsupportedModelError(MobiusError):
    """The architecture (model_type) has no registered family."""


class WeightsError(MobiusError):
    """A checkpoint tensor is missing, unused, misshapen, unsafe or corrupt."""


class SourceError(MobiusError):
    """The model source cannot be resolved: missing, gated, or without safetensors."""


def missing_modules(modules: Sequence[str]) -> list[str]:
    """Those of `modules` that cannot be imported here."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def require_extra(extra: str, modules: Sequence[str], *, needed_by: str) -> None:
    """A one-line MobiusError naming the pyproject extra to install when a module is missing."""
    missing = missing_modules(modules)
    if missing:
        raise MobiusError(
            f"{needed_by} needs {' and '.join(missing)}, which this environment lacks: "
            f'pip install "mobius-hub[{extra}]"'
        )

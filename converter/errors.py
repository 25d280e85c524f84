"""Errors the converter raises for bad input; each message names the problem."""


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

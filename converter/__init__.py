"""mobius converter: Hugging Face config + safetensors -> ONNX package.

Example: ``build("Qwen/Qwen2.5-0.5B-Instruct", ep="cuda", dtype="f16").save("out/")``.
"""

from converter.build import build
from converter.config import ArchitectureConfig
from converter.errors import (
    ConfigError,
    MobiusError,
    SourceError,
    UnsupportedModelError,
    WeightsError,
)
from converter.package import ModelPackage

__all__ = [
    "ArchitectureConfig",
    "ConfigError",
    "MobiusError",
    "ModelPackage",
    "SourceError",
    "UnsupportedModelError",
    "WeightsError",
    "build",
]

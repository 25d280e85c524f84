"""The package: components with bound weights, written where their runtimes look for them."""

from converter.package.genai_config import GENAI_CONFIG, genai_config
from converter.package.package import MANIFEST, ModelPackage

__all__ = ["GENAI_CONFIG", "MANIFEST", "ModelPackage", "genai_config"]

"""Every vision-language parity case, gathered from this package's modules (one per family
module): `CASES` maps a case id, `model_type` or `model_type:variant`, to a VlmCase."""

import importlib
import pkgutil
from dataclasses import dataclass, field


@dataclass(frozen=True)
class VlmCase:
    """A tiny config (`model_type`, `text_config`, `vision_config`, ...) for transformers'
    `model_class`, saved with random weights; `inputs` names the images and prompt of
    tests/parity/vlm_reference.py's INPUTS ("pixels": fixed-size images; "patches": Qwen-VL's
    flattened patches of two grids); `overrides` are config attributes set after
    construction."""

    config: dict
    inputs: str = "pixels"
    model_class: str = "AutoModelForImageTextToText"
    overrides: dict = field(default_factory=dict)


def _gather() -> dict[str, VlmCase]:
    cases: dict[str, VlmCase] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, case in module.CASES.items():
            if name in cases:
                raise RuntimeError(f"vision-language parity case {name!r} is defined twice")
            cases[name] = case
    return dict(sorted(cases.items()))


CASES = _gather()

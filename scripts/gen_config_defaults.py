"""Regenerate converter/data/config_defaults.json from the installed transformers.

python scripts/gen_config_defaults.py          # rewrite the file
python scripts/gen_config_defaults.py --check  # exit 1 when it is stale

For every registered family (and the types of the sections a family reads on their own, such as
CLIP's `clip_text_model`), the values its transformers configuration class gives a key that
config.json leaves out: each field the class declares (not the generic ones of PreTrainedConfig)
with a default other than None (numbers, strings, or tuples of them such as Swin's
`depths`), plus the rope settings a default instance ends up with (`rope_theta`; Gemma 3's
local base as `rope_local_base_freq`; `partial_rotary_factor`, which Phi defaults to 0.5; the whole
`rope_parameters` when a family's default rope is scaled, as Apertus' llama3 rope is). The
converter reads the file; only this script imports transformers.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from converter.config import FULL, SLIDING

OUT = Path(__file__).parents[1] / "converter" / "data" / "config_defaults.json"


def family_defaults(model_type: str) -> dict[str, Any]:
    import transformers

    cls = type(transformers.AutoConfig.for_model(model_type))
    generic = {f.name for f in dataclasses.fields(transformers.PreTrainedConfig)}
    declared = {
        name
        for klass in cls.__mro__
        if issubclass(klass, transformers.PreTrainedConfig)
        for name in vars(klass).get("__annotations__", {})
    }
    defaults = {
        f.name: list(f.default) if isinstance(f.default, tuple) else f.default
        for f in dataclasses.fields(cls)
        if f.name in declared - generic
        and not f.name.startswith("_")
        and (isinstance(f.default, bool | int | float | str) or _per_stage(f.default))
    }
    rope = cls().to_dict().get("rope_parameters")
    if rope:
        nested = FULL in rope  # per layer type (Gemma 3 and 4): their rules hold the defaults
        if nested:
            defaults["rope_local_base_freq"] = rope[SLIDING]["rope_theta"]
            rope = rope[FULL] or {}  # None: full layers without rotary (Beam)
        if "rope_theta" in rope:
            defaults["rope_theta"] = rope["rope_theta"]
        if not nested and rope.get("rope_type", "default") != "default":
            defaults["rope_parameters"] = rope
        if "partial_rotary_factor" in rope:
            defaults["partial_rotary_factor"] = rope["partial_rotary_factor"]
    return dict(sorted(defaults.items()))


def _types(registered: dict) -> set[str]:
    """Every registered type, and the types of the sections a family reads on their own
    defaults (CLIP's `clip_text_model` and `clip_vision_model`)."""
    nested = (getattr(f.rules, "nested_types", ()) for f in registered.values())
    return {*registered, *(t for types in nested for t in types)}


def _per_stage(value: Any) -> bool:
    """A tuple of plain values (per-stage settings of image models: widths, depths, CvT's
    `qkv_bias` flags and projection methods)."""
    return isinstance(value, tuple) and all(isinstance(v, bool | int | float | str) for v in value)


def render() -> str:
    import transformers

    from converter.registry import families

    data = {
        "transformers": transformers.__version__,
        "generator": "scripts/gen_config_defaults.py",
        "families": {name: family_defaults(name) for name in sorted(_types(families()))},
    }
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT} is stale: run python scripts/gen_config_defaults.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

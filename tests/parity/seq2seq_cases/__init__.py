"""Every encoder-decoder parity case, gathered from this package's modules (one per family
module): `CASES` maps a case id, `model_type` or `model_type:variant`, to a Seq2SeqCase."""

import importlib
import pkgutil
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Seq2SeqCase:
    """A tiny config (`model_type` and sizes) for transformers' `model_class`, saved with
    random weights. `inputs` names the encoder's modality in
    tests/parity/seq2seq_reference.py's INPUTS ("text": a padded batch of two sentences;
    speech families add theirs there); `overrides` are config attributes set after
    construction."""

    config: dict
    model_class: str = "AutoModelForSeq2SeqLM"
    inputs: str = "text"
    overrides: dict = field(default_factory=dict)


def _gather() -> dict[str, Seq2SeqCase]:
    cases: dict[str, Seq2SeqCase] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, case in module.CASES.items():
            if name in cases:
                raise RuntimeError(f"seq2seq parity case {name!r} is defined twice")
            cases[name] = case
    return dict(sorted(cases.items()))


CASES = _gather()

"""Every encoder-decoder parity case, gathered from this package's modules (one per family
module): `CASES` maps a case id, `model_type` or `model_type:variant`, to a Seq2SeqCase."""

from dataclasses import dataclass, field

from tests.parity.gather import gather_cases


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


CASES = gather_cases(__name__, __path__, "seq2seq parity case")

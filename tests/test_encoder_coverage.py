"""Encoders are counted like the decoders: every type of transformers' masked-LM,
image-classification, zero-shot-image-classification, CTC and audio-classification mappings is
registered for its encoder tasks (and then in the encoder parity matrix) or listed as not yet,
with its category and the reason."""

from __future__ import annotations

from transformers.models.auto import modeling_auto

from converter.not_yet import CATEGORIES
from converter.not_yet_encoders import ENCODER_NOT_YET
from converter.registry import families
from tests.parity.cases import model_type_of
from tests.parity.encoder_cases import CASES

ENCODER_TYPES = {
    model_type
    for mapping in (
        "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
        "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
        "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES",
        "MODEL_FOR_CTC_MAPPING_NAMES",
        "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES",
    )
    for model_type in getattr(modeling_auto, mapping)
}


def _encoders() -> set[str]:
    return {t for t, family in families().items() if family.task != "text-generation"}


def test_every_encoder_type_is_registered_or_listed_not_yet():
    registered = _encoders()
    unaccounted = sorted(ENCODER_TYPES - registered - set(ENCODER_NOT_YET))
    assert unaccounted == [], (
        f"neither registered nor in converter/not_yet_encoders.py: {unaccounted}"
    )
    both = sorted(registered & set(ENCODER_NOT_YET))
    assert both == [], f"registered and still listed as not yet: {both}"


def test_the_encoder_not_yet_table_is_current_and_says_why():
    stale = sorted(set(ENCODER_NOT_YET) - ENCODER_TYPES)
    assert stale == [], f"not encoder types of this transformers: {stale}"
    for model_type, (category, reason) in ENCODER_NOT_YET.items():
        assert category in CATEGORIES, model_type
        assert len(reason) > 20, model_type


def test_every_registered_encoder_is_in_the_parity_matrix():
    tested = {model_type_of(case) for case in CASES}
    untested = sorted(_encoders() - tested)
    assert untested == [], f"registered without an encoder parity case: {untested}"
    for case in CASES:
        assert model_type_of(case) in _encoders(), f"{case}: not a registered encoder"


def test_at_least_forty_encoder_types_convert():
    """Issue 12's bar: 40 parity-verified encoder types (each registered one has a parity case,
    checked above, run by tests/parity/test_encoder_parity.py)."""
    assert len(_encoders() & ENCODER_TYPES) >= 40

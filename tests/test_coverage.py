"""Coverage is counted, not claimed: every causal-LM model type of the pinned transformers is
either registered (and then parity-tested, tests/parity) or listed as not yet, with its
category and the reason."""

from __future__ import annotations

from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

from converter.not_yet import CATEGORIES, NOT_YET
from converter.registry import families
from tests.parity.cases import CASES, model_type_of

CAUSAL_LM = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _text_generation() -> set[str]:
    return {t for t, family in families().items() if family.task == "text-generation"}


def test_every_causal_lm_type_is_registered_or_listed_not_yet() -> None:
    registered = _text_generation()
    unaccounted = sorted(CAUSAL_LM - registered - set(NOT_YET))
    assert unaccounted == [], f"neither registered nor in converter/not_yet.py: {unaccounted}"
    both = sorted(registered & set(NOT_YET))
    assert both == [], f"registered and still listed as not yet: {both}"


def test_the_not_yet_table_is_current_and_says_why() -> None:
    stale = sorted(set(NOT_YET) - CAUSAL_LM)
    assert stale == [], f"not causal-LM types of this transformers: {stale}"
    for model_type, (category, reason) in NOT_YET.items():
        assert category in CATEGORIES, model_type
        assert len(reason) > 20, f"{model_type}: give the reason, not a placeholder"


def test_no_dense_decoder_is_left_without_its_reason() -> None:
    placeholder = "dense decoder: not converted yet"
    vague = sorted(t for t, (_, reason) in NOT_YET.items() if reason == placeholder)
    assert vague == [], f"say why these dense decoders do not convert: {vague}"


def test_at_least_sixty_causal_lm_types_convert() -> None:
    """Issue 10's bar: 60 parity-verified causal-LM model types (every registered one has a
    parity case, tested below and run by tests/parity)."""
    assert len(_text_generation() & CAUSAL_LM) >= 60


def test_every_registered_type_is_in_the_parity_matrix() -> None:
    tested = {model_type_of(case) for case in CASES}
    untested = sorted(_text_generation() - tested)
    assert untested == [], f"registered without a parity case: {untested}"
    for model_type, family in families().items():
        assert family.category in CATEGORIES, model_type

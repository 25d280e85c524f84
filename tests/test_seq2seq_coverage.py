"""Encoder-decoders are counted like the decoders and encoders: every type of transformers'
seq2seq-LM and speech-seq2seq mappings is registered as an encoder-decoder (and then in the
seq2seq parity matrix) or listed as not yet, with its category and the reason."""

from __future__ import annotations

from transformers.models.auto import modeling_auto

from converter.not_yet import CATEGORIES
from converter.not_yet_seq2seq import SEQ2SEQ_NOT_YET
from converter.registry import families, scope_of
from tests.parity.cases import model_type_of
from tests.parity.seq2seq_cases import CASES

SEQ2SEQ_TYPES = set(modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES) | set(
    modeling_auto.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES
)


def _seq2seq() -> set[str]:
    return {t for t, family in families().items() if scope_of(family) == "seq2seq"}


def test_every_seq2seq_type_is_registered_or_listed_not_yet():
    registered = _seq2seq()
    unaccounted = sorted(SEQ2SEQ_TYPES - registered - set(SEQ2SEQ_NOT_YET))
    assert unaccounted == [], (
        f"neither registered nor in converter/not_yet_seq2seq.py: {unaccounted}"
    )
    both = sorted(registered & set(SEQ2SEQ_NOT_YET))
    assert both == [], f"registered and still listed as not yet: {both}"


def test_the_seq2seq_not_yet_table_is_current_and_says_why():
    stale = sorted(set(SEQ2SEQ_NOT_YET) - SEQ2SEQ_TYPES)
    assert stale == [], f"not seq2seq types of this transformers: {stale}"
    for model_type, (category, reason) in SEQ2SEQ_NOT_YET.items():
        assert category in CATEGORIES, model_type
        assert len(reason) > 20, model_type


def test_every_registered_seq2seq_type_is_in_the_parity_matrix():
    tested = {model_type_of(case) for case in CASES}
    untested = sorted(_seq2seq() - tested)
    assert untested == [], f"registered without a seq2seq parity case: {untested}"
    for case in CASES:
        assert model_type_of(case) in _seq2seq(), f"{case}: not a registered encoder-decoder"

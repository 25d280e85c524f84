"""Settings an encoder-decoder family's config can hold but the converter does not build are
refused by name, before any weight is read (never converted as something else)."""

from __future__ import annotations

import pytest
import transformers

from converter.config import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from tests.parity.cases import model_type_of
from tests.parity.seq2seq_cases import CASES

REFUSED = [
    ("mvp", {"use_prompt": True}, "use_prompt"),
    ("marian", {"decoder_vocab_size": 100}, "decoder_vocab_size"),  # one shared table
    ("fsmt", {"tie_word_embeddings": True}, "tie_word_embeddings"),
    ("pegasus_x", {"block_size": 5}, "block_size"),  # staggered by half a block
    ("led", {"attention_window": [4, 8]}, "attention_window"),  # one window per layer
    ("led", {"attention_window": 5}, "attention_window"),
    ("bigbird_pegasus", {"attention_type": "sparse"}, "attention_type"),
]


@pytest.mark.parametrize(("case", "changes", "key"), REFUSED, ids=lambda v: str(v)[:40])
def test_an_unbuilt_setting_is_refused_by_name(case, changes, key):
    model_type = model_type_of(case)
    config = transformers.AutoConfig.for_model(**CASES[case].config).to_dict() | changes
    rules = family_for(model_type).rules
    with pytest.raises(ConfigError, match=f"'{key}' = .* is not supported: "):
        rules.read(ConfigReader(rules.select(config), model_type))


@pytest.mark.parametrize("case", sorted({case for case, _, _ in REFUSED}))
def test_the_case_itself_reads(case):
    model_type = model_type_of(case)
    config = transformers.AutoConfig.for_model(**CASES[case].config).to_dict()
    rules = family_for(model_type).rules
    rules.read(ConfigReader(rules.select(config), model_type))

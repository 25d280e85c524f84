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
    ("nllb-moe", {"second_expert_policy": "sampling"}, "second_expert_policy"),  # Gumbel noise
    ("nllb-moe", {"second_expert_policy": "random"}, "second_expert_policy"),
    ("nllb-moe", {"router_dtype": "bfloat16"}, "router_dtype"),
]


@pytest.mark.parametrize(("case", "changes", "key"), REFUSED, ids=lambda v: str(v)[:40])
def test_an_unbuilt_setting_is_refused_by_name(case, changes, key):
    model_type = model_type_of(case)
    config = transformers.AutoConfig.for_model(**CASES[case].config).to_dict() | changes
    rules = family_for(model_type).rules
    with pytest.raises(ConfigError, match=f"'{key}' = .* is not supported: "):
        rules.read(ConfigReader(rules.select(config), model_type))


@pytest.mark.parametrize(
    "case", sorted({case for case, _, _ in REFUSED} | {"encoder-decoder", "t5gemma"})
)
def test_the_case_itself_reads(case):
    model_type = model_type_of(case)
    config = transformers.AutoConfig.for_model(**CASES[case].config).to_dict()
    rules = family_for(model_type).rules
    rules.read(ConfigReader(rules.select(config), model_type))


def _side(case: str, side: str, **changes) -> dict:
    """A composed model's config with keys of its `encoder` or `decoder` section changed."""
    config = transformers.AutoConfig.for_model(**CASES[case].config).to_dict()
    return config | {side: config[side] | changes}


# models composed of an `encoder` and a `decoder` section: what a pair may hold that is not
# built, each named
COMPOSED_REFUSED = [
    (
        _side("encoder-decoder", "encoder", model_type="roberta"),
        "'encoder.model_type' = 'roberta' is not supported",
    ),
    (
        _side("encoder-decoder", "decoder", model_type="gpt2"),
        "'decoder.model_type' = 'gpt2' is not supported",
    ),
    (_side("encoder-decoder", "decoder", hidden_size=32), "enc_to_dec_proj is not built"),
    (_side("encoder-decoder", "decoder", is_decoder=False), "'decoder.is_decoder' must be true"),
    (
        _side("encoder-decoder", "decoder", add_cross_attention=False),
        "'decoder.add_cross_attention' must be true",
    ),
    (_side("t5gemma", "encoder", hidden_size=128), "unbalanced T5Gemma .* is not built"),
    (_side("t5gemma", "decoder", sliding_window=None), "'decoder.sliding_window' is null"),
]


@pytest.mark.parametrize(("config", "named"), COMPOSED_REFUSED, ids=lambda v: str(v)[-40:])
def test_an_unbuilt_composed_pair_is_refused_by_name(config, named):
    rules = family_for(config["model_type"]).rules
    with pytest.raises(ConfigError, match=named):
        rules.read(ConfigReader(rules.select(config), config["model_type"]))

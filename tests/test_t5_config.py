"""How T5-family config.json files read: the LM head's input scale and the feed-forward as
transformers derives them, and LongT5's refusals."""

from __future__ import annotations

import pytest

from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from converter.tasks.choice import task_of
from tests.parity.seq2seq_cases.t5 import T5_SIZES


def read(model_type: str, **changes):
    raw = {"model_type": model_type, **T5_SIZES, **changes}
    return family_for(model_type).rules.read(ConfigReader(raw, model_type))


@pytest.mark.parametrize(
    ("model_type", "changes", "scaled"),
    [
        ("t5", {}, True),
        ("t5", {"tie_word_embeddings": False}, False),  # T5 v1.1 / FLAN-T5
        ("t5", {"tie_word_embeddings": False, "scale_decoder_outputs": True}, True),
        ("umt5", {"tie_word_embeddings": False}, False),
        ("mt5", {"tie_word_embeddings": True}, False),  # mT5 never scales
        ("longt5", {}, True),
    ],
)
def test_the_head_input_is_scaled_where_transformers_scales_it(model_type, changes, scaled):
    assert read(model_type, **changes).extra["t5"].scale_logits is scaled


@pytest.mark.parametrize(
    ("changes", "activation", "gated"),
    [
        ({"feed_forward_proj": "relu"}, "relu", False),
        ({"feed_forward_proj": "gated-gelu"}, "gelu_new", True),  # tanh-GELU, as transformers
        ({"feed_forward_proj": "gelu"}, "gelu", False),
        ({"feed_forward_proj": "gated-silu"}, "silu", True),
        ({"feed_forward_proj": "gated-gelu", "dense_act_fn": "relu"}, "relu", True),
    ],
)
def test_feed_forward_proj(changes, activation, gated):
    cfg = read("t5", **changes)
    assert (cfg.activation, cfg.extra["t5"].gated) == (activation, gated)


def test_a_malformed_feed_forward_proj_is_refused():
    with pytest.raises(ConfigError, match="feed_forward_proj"):
        read("t5", feed_forward_proj="swiglu-gelu")


def test_decoder_layers_default_to_encoder_layers_and_start_from_pad():
    cfg = read("t5", num_decoder_layers=None, decoder_start_token_id=None, pad_token_id=3)
    assert (cfg.decoder_layers, cfg.decoder_start_token_id) == (cfg.encoder_layers, 3)


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"encoder_attention_type": "global"}, "encoder_attention_type"),
        (
            {"encoder_attention_type": "transient-global", "global_block_size": 12},
            "global_block_size",
        ),
    ],
)
def test_longt5_refusals(changes, key):
    with pytest.raises(ConfigError, match=key):
        read("longt5", **changes)


def test_t5_heads():
    t5 = family_for("t5")
    for head in ("T5ForConditionalGeneration", "T5Model"):
        assert task_of({"architectures": [head]}, t5, None) == "text2text-generation"
    with pytest.raises(ConfigError, match="'T5EncoderModel' is a head mobius does not convert"):
        task_of({"architectures": ["T5EncoderModel"]}, t5, None)  # no decoder to build

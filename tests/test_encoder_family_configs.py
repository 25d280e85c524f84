"""Encoder families read the config.json spellings found on the Hub (older keys included) the
way transformers does, and refuse settings they do not build by name."""

from __future__ import annotations

import pytest

from converter.config import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for


def _read(model_type: str, **raw):
    family = family_for(model_type)
    return family.rules.read(ConfigReader({"model_type": model_type, **raw}, model_type))


def test_modernbert_reads_the_older_rope_bases_and_window():
    cfg = _read(
        "modernbert",
        global_rope_theta=1000.0,
        local_rope_theta=50.0,
        local_attention=8,
        global_attn_every_n_layers=2,
        num_hidden_layers=4,
    )
    assert (cfg.rope.theta, cfg.local_rope.theta) == (1000.0, 50.0)
    assert cfg.window == 4
    assert cfg.sliding == (False, True, False, True)


def test_modernbert_rope_scaling_applies_to_local_layers_too():
    cfg = _read("modernbert", rope_scaling={"rope_type": "linear", "factor": 2.0})
    assert cfg.rope.kind == cfg.local_rope.kind == "linear"
    assert (cfg.rope.theta, cfg.local_rope.theta) == (160000.0, 10000.0)


REFUSED = [
    ("deberta-v2", {"pos_att_type": "p2c|p2p"}, "pos_att_type"),
    ("deberta-v2", {"conv_kernel_size": 4}, "conv_kernel_size"),
    ("deberta-v2", {"pooler_hidden_size": 32}, "pooler_hidden_size"),
    ("deberta-v2", {"attention_head_size": 32}, "attention_head_size"),
    ("deberta", {"talking_head": True}, "talking_head"),
    ("modernbert", {"classifier_pooling": "max"}, "classifier_pooling"),
    ("mpnet", {"relative_attention_num_buckets": 16}, "relative_attention_num_buckets"),
    ("roformer", {"is_decoder": True}, "is_decoder"),
    # keys of nomic-embed's remote code that transformers' port does not read
    ("nomic_bert", {"n_embd": 1024}, "n_embd"),
    ("nomic_bert", {"moe_every_n_layers": 2}, "moe_every_n_layers"),
    ("nomic_bert", {"rotary_emb_fraction": 0.5}, "rotary_emb_fraction"),
    ("nomic_bert", {"head_dim": 32}, "head_dim"),
    ("flaubert", {"pre_norm": True}, "pre_norm"),
    ("xlm", {"n_langs": 2}, "n_langs"),
    ("xlm", {"causal": True}, "causal"),
    ("gte", {"rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}}, "partial"),
    ("longformer", {"attention_window": 5}, "attention_window"),
    ("longformer", {"attention_window": [4, 4], "num_hidden_layers": 3}, "attention_window"),
    ("funnel", {"truncate_seq": False}, "truncate_seq"),
    ("funnel", {"attention_type": "absolute"}, "attention_type"),
    ("funnel", {"block_sizes": [2, 2], "block_repeats": [1]}, "block_repeats"),
]


@pytest.mark.parametrize(("model_type", "raw", "key"), REFUSED)
def test_unbuilt_settings_are_refused_by_name(model_type, raw, key):
    with pytest.raises(ConfigError, match=key):
        _read(model_type, **raw)


def test_ultrabert_reads_its_older_windows_and_rope_bases():
    cfg = _read(
        "ultrabert",
        num_hidden_layers=3,
        attention_windows=[64, 0, 64],
        rope_theta=[10.0, 20.0, 30.0],
    )
    assert cfg.sliding == (True, False, True)
    assert cfg.window == 64
    assert (cfg.local_rope.theta, cfg.rope.theta) == (30.0, 20.0)


def test_longformer_reads_one_window_or_one_per_layer():
    assert _read("longformer", num_hidden_layers=2).extra["one_sided_windows"] == (256, 256)
    cfg = _read("longformer", num_hidden_layers=2, attention_window=[8, 4])
    assert cfg.extra["one_sided_windows"] == (4, 2)

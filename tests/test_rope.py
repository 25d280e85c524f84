"""converter.config.rope against transformers' own rotary embeddings, plus ConfigError checks."""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
import torch
from transformers import Gemma3TextConfig, LlamaConfig, Phi3Config
from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding

from converter.config.rope import Rope, parse_local_rope, parse_rope
from converter.errors import ConfigError

RTOL = 1e-6
HEAD_DIM = 32
BASE = {
    "hidden_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": HEAD_DIM,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "vocab_size": 64,
    "max_position_embeddings": 4096,
}


def _ramp(n: int, lo: float, hi: float) -> list[float]:
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def cfg(**extra: object) -> dict:
    return {**copy.deepcopy(BASE), **copy.deepcopy(extra)}


def _hf_module(raw: dict) -> torch.nn.Module:
    """transformers' rotary module for a Llama-shaped raw config (Phi-3 for longrope, since
    Llama's default init ignores partial_rotary_factor and Phi-3's honours it)."""
    params = raw.get("rope_scaling") or raw.get("rope_parameters") or {}
    kind = params.get("rope_type", params.get("type", "default"))
    if kind in ("longrope", "su", "default") or raw.get("model_type") == "phi3":
        config = Phi3Config.from_dict(copy.deepcopy(raw))
        return Phi3RotaryEmbedding(config)
    return LlamaRotaryEmbedding(LlamaConfig.from_dict(copy.deepcopy(raw)))


def _close(ours: np.ndarray, theirs: torch.Tensor) -> None:
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=RTOL, atol=0)


def _short(n: int = HEAD_DIM // 2) -> list[float]:
    return _ramp(n, 1.0, 1.3)


def _long(n: int = HEAD_DIM // 2) -> list[float]:
    return _ramp(n, 1.0, 40.0)


# Each entry: (test id, raw config). All are Llama-shaped (head_dim 32, max 4096).
CASES = [
    ("default-none", cfg()),
    ("default-old", cfg(rope_theta=500000.0)),
    ("default-old-type", cfg(rope_theta=1e6, rope_scaling={"type": "default"})),
    ("default-new", cfg(rope_parameters={"rope_type": "default", "rope_theta": 1e6})),
    ("default-old-partial", cfg(rope_theta=1e4, partial_rotary_factor=0.5)),
    (
        "default-new-partial",
        cfg(
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 5e6,
                "partial_rotary_factor": 0.5,
            }
        ),
    ),
    ("linear-old", cfg(rope_theta=1e4, rope_scaling={"type": "linear", "factor": 4.0})),
    (
        "linear-new-partial",
        cfg(
            rope_parameters={
                "rope_type": "linear",
                "factor": 2.0,
                "rope_theta": 1e6,
                "partial_rotary_factor": 0.5,
            }
        ),
    ),
    ("dynamic-old", cfg(rope_scaling={"type": "dynamic", "factor": 2.0})),
    (
        "dynamic-new-partial",
        cfg(rope_parameters={"rope_type": "dynamic", "factor": 4, "rope_theta": 1e6}),
    ),
    (
        "dynamic-old-partial",
        cfg(
            rope_theta=5e5,
            partial_rotary_factor=0.5,
            rope_scaling={"rope_type": "dynamic", "factor": 3.0},
        ),
    ),
    (
        "yarn-qwen",
        cfg(
            rope_theta=1e6,
            rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
        ),
    ),
    (
        "yarn-deepseek-mscale",
        cfg(
            rope_theta=1e4,
            rope_scaling={
                "type": "yarn",
                "factor": 40,
                "mscale": 0.707,
                "mscale_all_dim": 1.0,
                "beta_fast": 32,
                "beta_slow": 1,
                "original_max_position_embeddings": 4096,
            },
        ),
    ),
    (
        "yarn-mscale-only-ignored",
        cfg(rope_scaling={"rope_type": "yarn", "factor": 8.0, "mscale": 2.0}),
    ),
    (
        "yarn-gptoss-no-truncate",
        cfg(
            rope_parameters={
                "rope_type": "yarn",
                "rope_theta": 150000.0,
                "factor": 32.0,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "truncate": False,
                "original_max_position_embeddings": 128,
            }
        ),
    ),
    (
        "yarn-null-factor",
        cfg(
            rope_scaling={
                "rope_type": "yarn",
                "factor": None,
                "original_max_position_embeddings": 512,
            }
        ),
    ),
    (
        "yarn-attention-factor-partial",
        cfg(
            partial_rotary_factor=0.5,
            rope_scaling={
                "rope_type": "yarn",
                "factor": 2.0,
                "attention_factor": 0.8,
                "beta_fast": 16,
                "beta_slow": 2,
                "original_max_position_embeddings": 2048,
            },
        ),
    ),
    (
        "yarn-toplevel-original-wins",
        cfg(
            original_max_position_embeddings=2048,
            rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
        ),
    ),
    ("yarn-no-original", cfg(rope_scaling={"type": "yarn", "factor": 4.0})),
    (
        "longrope-phi3-old",
        cfg(
            rope_theta=1e4,
            original_max_position_embeddings=1024,
            rope_scaling={"type": "longrope", "short_factor": _short(), "long_factor": _long()},
        ),
    ),
    (
        "longrope-su",
        cfg(
            original_max_position_embeddings=1024,
            # transformers 5.24 refuses "su" without an original_max inside rope_scaling; the
            # top-level value still wins over it
            rope_scaling={
                "type": "su",
                "short_factor": _short(),
                "long_factor": _long(),
                "original_max_position_embeddings": 999,
            },
        ),
    ),
    (
        "longrope-phi3-yarn-alias",
        cfg(
            model_type="phi3",
            original_max_position_embeddings=2048,
            rope_scaling={"type": "yarn", "short_factor": _short(), "long_factor": _long()},
        ),
    ),
    (
        "longrope-new-factor",
        cfg(
            original_max_position_embeddings=512,
            rope_parameters={
                "rope_type": "longrope",
                "rope_theta": 250000.0,
                "factor": 16.0,
                "short_factor": _short(),
                "long_factor": _long(),
            },
        ),
    ),
    (
        "longrope-attention-factor-partial",
        cfg(
            original_max_position_embeddings=1024,
            partial_rotary_factor=0.5,
            rope_scaling={
                "rope_type": "longrope",
                "attention_factor": 1.25,
                "short_factor": _short(8),
                "long_factor": _long(8),
            },
        ),
    ),
    (
        "longrope-no-scaling-needed",
        cfg(
            original_max_position_embeddings=4096,
            rope_scaling={"type": "longrope", "short_factor": _short(), "long_factor": _long()},
        ),
    ),
    (
        "llama3-old",
        cfg(
            rope_theta=500000.0,
            max_position_embeddings=131072,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
        ),
    ),
    (
        "llama3-new-partial",
        cfg(
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": 10000.0,
                "factor": 32.0,
                "low_freq_factor": 1,
                "high_freq_factor": 8,
                "original_max_position_embeddings": 256,
                "partial_rotary_factor": 0.5,
            },
        ),
    ),
]


def _parse(raw: dict) -> Rope:
    """As the family reads it: Phi-3's rules read an old "yarn" type as longrope."""
    yarn_is_longrope = raw.get("model_type") == "phi3"
    return parse_rope(copy.deepcopy(raw), head_dim=HEAD_DIM, yarn_is_longrope=yarn_is_longrope)


@pytest.mark.parametrize("raw", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_transformers(raw: dict) -> None:
    rope = _parse(raw)
    module = _hf_module(raw)
    _close(rope.inv_freq(), module.inv_freq)
    assert rope.inv_freq().shape == (rope.dim // 2,)
    assert rope.attention_scaling() == pytest.approx(module.attention_scaling, rel=RTOL)


def _hf_after_forward(raw: dict, seq_len: int) -> torch.nn.Module:
    """A fresh rotary module after one forward over positions 0..seq_len-1."""
    module = _hf_module(raw)
    positions = torch.arange(seq_len)[None]
    module(torch.zeros(1, seq_len, HEAD_DIM), positions)
    return module


DYNAMIC = [c for c in CASES if c[0].startswith("dynamic")]


@pytest.mark.parametrize("raw", [c[1] for c in DYNAMIC], ids=[c[0] for c in DYNAMIC])
@pytest.mark.parametrize("seq_len", [7, 4095, 4096, 4097, 6000, 12288])
def test_dynamic_ntk_matches_forward(raw: dict, seq_len: int) -> None:
    rope = _parse(raw)
    assert rope.kind == "dynamic"
    _close(rope.dynamic_inv_freq(seq_len), _hf_after_forward(raw, seq_len).inv_freq)


def test_dynamic_formula_in_closed_form() -> None:
    rope = parse_rope(cfg(rope_scaling={"type": "dynamic", "factor": 2.0}), head_dim=HEAD_DIM)
    seq_len = 10000
    scale = 2.0 * seq_len / 4096 - 1.0
    expected = rope.inv_freq().astype(np.float64) * scale ** (
        -np.arange(0, HEAD_DIM, 2) / (HEAD_DIM - 2)
    )
    np.testing.assert_allclose(rope.dynamic_inv_freq(seq_len), expected, rtol=RTOL)


def test_non_dynamic_dynamic_inv_freq_is_inv_freq() -> None:
    rope = parse_rope(cfg(rope_scaling={"type": "linear", "factor": 2.0}), head_dim=HEAD_DIM)
    np.testing.assert_array_equal(rope.dynamic_inv_freq(100000), rope.inv_freq())


LONGROPE = [c for c in CASES if c[0].startswith("longrope")]


@pytest.mark.parametrize("raw", [c[1] for c in LONGROPE], ids=[c[0] for c in LONGROPE])
def test_longrope_switches_after_original_max(raw: dict) -> None:
    rope = _parse(raw)
    assert rope.kind == "longrope"
    orig = rope.original_max_position_embeddings
    assert orig is not None
    _close(rope.inv_freq(), _hf_after_forward(raw, orig).inv_freq)  # max position orig - 1
    long_module = _hf_after_forward(raw, orig + 1)  # max position == orig
    _close(rope.inv_freq(long=True), long_module.inv_freq)
    assert rope.attention_scaling() == pytest.approx(long_module.attention_scaling, rel=RTOL)


def test_longrope_default_attention_factor() -> None:
    raw = cfg(
        max_position_embeddings=131072,
        original_max_position_embeddings=4096,
        rope_scaling={"type": "longrope", "short_factor": _short(), "long_factor": _long()},
    )
    rope = parse_rope(raw, head_dim=HEAD_DIM)
    assert rope.factor == 32.0
    assert rope.attention_scaling() == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))


def test_long_only_for_longrope() -> None:
    with pytest.raises(ValueError, match="longrope"):
        parse_rope(cfg(), head_dim=HEAD_DIM).inv_freq(long=True)


def test_mrope_reads_as_default() -> None:
    raw = cfg(rope_theta=1e6, rope_scaling={"type": "mrope", "mrope_section": [4, 6, 6]})
    rope = parse_rope(raw, head_dim=HEAD_DIM)
    assert rope.kind == "default"
    np.testing.assert_array_equal(
        rope.inv_freq(), parse_rope(cfg(rope_theta=1e6), head_dim=HEAD_DIM).inv_freq()
    )


def test_rope_parameters_theta_wins_and_gpt_neox_spelling() -> None:
    raw = cfg(rope_theta=1.0e4, rope_parameters={"rope_type": "default", "rope_theta": 2.0e4})
    assert parse_rope(raw, head_dim=HEAD_DIM).theta == 2.0e4
    neox = cfg(rotary_emb_base=5.0e4, rotary_pct=0.25)
    rope = parse_rope(neox, head_dim=HEAD_DIM)
    assert (rope.theta, rope.dim) == (5.0e4, 8)


@pytest.mark.parametrize("model_type", ["gpt_neox", "gpt_neox_japanese"])
def test_gpt_neox_legacy_keys_win_over_the_family_defaults(model_type: str) -> None:
    """The family's default partial_rotary_factor and rope_theta (filled in for keys a
    config.json leaves out) must not hide the rotary_pct and rotary_emb_base it does carry."""
    import transformers

    from converter.config import ArchitectureConfig

    raw = {
        **cfg(rotary_emb_base=5.0e4, rotary_pct=0.5),
        "model_type": model_type,
        "vocab_size": 1 << 15,
    }
    raw.pop("head_dim")
    rope = ArchitectureConfig.from_hf(raw).rope
    hf = transformers.AutoConfig.for_model(**copy.deepcopy(raw)).rope_parameters
    assert (rope.theta, rope.dim) == (hf["rope_theta"], int(HEAD_DIM * hf["partial_rotary_factor"]))
    assert (rope.theta, rope.dim) == (5.0e4, 16)


def test_defaults_resolved() -> None:
    rope = parse_rope(cfg(rope_scaling={"type": "yarn", "factor": 4.0}), head_dim=HEAD_DIM)
    assert rope == Rope(
        kind="yarn",
        theta=10000.0,
        dim=HEAD_DIM,
        max_position_embeddings=4096,
        factor=4.0,
        original_max_position_embeddings=4096,
        beta_fast=32.0,
        beta_slow=1.0,
    )


# --- Gemma 3 -------------------------------------------------------------------------------

GEMMA = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": HEAD_DIM,
    "intermediate_size": 64,
    "num_hidden_layers": 6,
    "vocab_size": 64,
    "max_position_embeddings": 8192,
    "sliding_window": 512,
}
GEMMA_CASES = [
    (
        "gemma3-old",
        {
            **GEMMA,
            "rope_theta": 1e6,
            "rope_local_base_freq": 1e4,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        },
    ),
    ("gemma3-old-no-scaling", {**GEMMA, "rope_theta": 1e6, "rope_local_base_freq": 2e4}),
    (
        "gemma3-new",
        {
            **GEMMA,
            "rope_parameters": {
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            },
        },
    ),
    (
        "gemma3-new-yarn-truncate-ignored",
        {
            **GEMMA,
            "rope_parameters": {
                "full_attention": {
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "rope_theta": 1e6,
                    "truncate": False,
                    "original_max_position_embeddings": 2048,
                },
                "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            },
        },
    ),
]


def _gemma_module(raw: dict) -> Gemma3RotaryEmbedding:
    return Gemma3RotaryEmbedding(Gemma3TextConfig.from_dict(copy.deepcopy(raw)))


@pytest.mark.parametrize("raw", [c[1] for c in GEMMA_CASES], ids=[c[0] for c in GEMMA_CASES])
def test_gemma3_global_and_local(raw: dict) -> None:
    module = _gemma_module(raw)
    full = parse_rope(copy.deepcopy(raw), head_dim=HEAD_DIM)
    _close(full.inv_freq(), module.full_attention_inv_freq)
    assert full.attention_scaling() == pytest.approx(module.full_attention_attention_scaling)
    local = parse_local_rope(copy.deepcopy(raw), head_dim=HEAD_DIM)
    assert local is not None
    _close(local.inv_freq(), module.sliding_attention_inv_freq)
    assert local.attention_scaling() == module.sliding_attention_attention_scaling
    assert parse_rope(raw, head_dim=HEAD_DIM, layer_type="sliding_attention") == local
    assert parse_rope(raw, head_dim=HEAD_DIM, layer_type="full_attention") == full


def test_no_local_rope() -> None:
    assert parse_local_rope(cfg(rope_theta=1e6), head_dim=HEAD_DIM) is None
    flat = cfg(rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    assert parse_local_rope(flat, head_dim=HEAD_DIM) is None
    # a flat config has one rope for every layer type
    assert parse_rope(flat, head_dim=HEAD_DIM, layer_type="sliding_attention").theta == 1e6


# --- validation ----------------------------------------------------------------------------

SHORT, LONG = _short(), _long()
LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 1024,
}
BAD = [
    ("unknown-type", cfg(rope_scaling={"type": "ntk"}), "rope_scaling.type"),
    ("unknown-rope-type", cfg(rope_parameters={"rope_type": "axial"}), "rope_parameters.rope_type"),
    ("type-not-str", cfg(rope_scaling={"rope_type": 3, "factor": 2.0}), "rope_scaling.rope_type"),
    ("linear-no-factor", cfg(rope_scaling={"type": "linear"}), "rope_scaling.factor"),
    ("linear-null-factor", cfg(rope_scaling={"type": "linear", "factor": None}), "factor"),
    ("dynamic-zero-factor", cfg(rope_scaling={"type": "dynamic", "factor": 0}), "factor"),
    (
        "yarn-no-factor",
        cfg(rope_parameters={"rope_type": "yarn", "original_max_position_embeddings": 1024}),
        "rope_parameters.factor",
    ),
    ("llama3-negative-factor", cfg(rope_scaling={**LLAMA3, "factor": -8.0}), "factor"),
    ("factor-string", cfg(rope_scaling={"type": "linear", "factor": "2"}), "factor"),
    ("factor-bool", cfg(rope_scaling={"type": "linear", "factor": True}), "factor"),
    (
        "short-factor-length",
        cfg(rope_scaling={"type": "longrope", "short_factor": SHORT[:-1], "long_factor": LONG}),
        "short_factor",
    ),
    (
        "long-factor-length",
        cfg(rope_scaling={"type": "longrope", "short_factor": SHORT, "long_factor": [*LONG, 1.0]}),
        "long_factor",
    ),
    (
        "short-factor-missing",
        cfg(rope_scaling={"type": "longrope", "long_factor": LONG}),
        "short_factor",
    ),
    (
        "long-factor-entry-string",
        cfg(rope_scaling={"type": "su", "short_factor": SHORT, "long_factor": ["1", *LONG[1:]]}),
        "long_factor[0]",
    ),
    ("theta-inf", cfg(rope_theta=float("inf")), "rope_theta"),
    ("theta-nan", cfg(rope_parameters={"rope_theta": float("nan")}), "rope_parameters.rope_theta"),
    ("theta-zero", cfg(rope_theta=0.0), "rope_theta"),
    ("theta-negative", cfg(rope_theta=-1e4), "rope_theta"),
    ("theta-string", cfg(rope_theta="10000"), "rope_theta"),
    ("partial-odd-dim", cfg(partial_rotary_factor=0.15625), "partial_rotary_factor"),
    ("partial-zero-dim", cfg(partial_rotary_factor=0.01), "partial_rotary_factor"),
    ("partial-above-one", cfg(partial_rotary_factor=1.5), "partial_rotary_factor"),
    ("partial-string", cfg(partial_rotary_factor="0.5"), "partial_rotary_factor"),
    ("llama3-no-low", cfg(rope_scaling={**LLAMA3, "low_freq_factor": None}), "low_freq_factor"),
    (
        "llama3-no-high",
        cfg(rope_scaling={k: v for k, v in LLAMA3.items() if k != "high_freq_factor"}),
        "high_freq_factor",
    ),
    (
        "llama3-high-not-above-low",
        cfg(rope_scaling={**LLAMA3, "high_freq_factor": 1.0}),
        "high_freq_factor",
    ),
    (
        "llama3-no-original",
        cfg(rope_scaling={k: v for k, v in LLAMA3.items() if not k.startswith("original")}),
        "original_max_position_embeddings",
    ),
    (
        "original-string",
        cfg(rope_scaling={**LLAMA3, "original_max_position_embeddings": "1024"}),
        "original_max_position_embeddings",
    ),
    (
        "beta-fast-string",
        cfg(rope_scaling={"type": "yarn", "factor": 2.0, "beta_fast": "32"}),
        "beta_fast",
    ),
    (
        "mscale-string",
        cfg(rope_scaling={"type": "yarn", "factor": 2.0, "mscale": "1"}),
        "mscale",
    ),
    (
        "truncate-string",
        cfg(rope_scaling={"type": "yarn", "factor": 2.0, "truncate": "no"}),
        "truncate",
    ),
    (
        "attention-factor-zero",
        cfg(rope_scaling={"type": "yarn", "factor": 2.0, "attention_factor": 0.0}),
        "attention_factor",
    ),
    (
        "max-position-missing",
        {k: v for k, v in BASE.items() if k != "max_position_embeddings"},
        "max_position_embeddings",
    ),
    ("max-position-string", cfg(max_position_embeddings="4096"), "max_position_embeddings"),
    ("rope-scaling-not-dict", cfg(rope_scaling=["linear", 2.0]), "rope_scaling"),
    (
        "gemma-local-theta-string",
        cfg(rope_local_base_freq="1e4", rope_theta=1e6),
        "rope_local_base_freq",
    ),
]


@pytest.mark.parametrize(("raw", "key"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_config_errors_name_the_key(raw: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(key)):
        parse_rope(raw, head_dim=HEAD_DIM, layer_type="sliding_attention")


@pytest.mark.parametrize(
    ("head_dim", "key"), [(15, "head_dim"), (0, "head_dim"), (2, "head_dim")], ids=str
)
def test_bad_head_dim(head_dim: int, key: str) -> None:
    raw = cfg(rope_scaling={"type": "dynamic", "factor": 2.0})
    with pytest.raises(ConfigError, match=key):
        parse_rope(raw, head_dim=head_dim)


def test_nested_missing_layer_type() -> None:
    raw = cfg(rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6}})
    with pytest.raises(ConfigError, match=re.escape("rope_parameters.chunked_attention")):
        parse_rope(raw, head_dim=HEAD_DIM, layer_type="chunked_attention")


@pytest.mark.parametrize("kind", ["default", "linear", "yarn"])
def test_float32_exponents_like_transformers(kind: str) -> None:
    """head_dim 96, theta 1e8: 2i/dim is inexact in float32 and transformers rounds it there;
    doing the same keeps us within one float32 ulp (float64 exponents drift to ~5e-7)."""
    params = {"rope_type": kind, "rope_theta": 1e8, "partial_rotary_factor": 0.75}
    if kind != "default":
        params |= {"factor": 4.0, "original_max_position_embeddings": 1024}
    raw = {**BASE, "hidden_size": 384, "head_dim": 96, "rope_parameters": params}
    rope = parse_rope(copy.deepcopy(raw), head_dim=96)
    assert rope.dim == 72
    theirs = _hf_module(raw).inv_freq.numpy()
    np.testing.assert_allclose(rope.inv_freq(), theirs, rtol=1.5e-7, atol=0)

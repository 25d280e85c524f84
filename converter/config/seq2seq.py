"""Seq2SeqConfig: the normalized view of an encoder-decoder text model's config.json (BART and
its relatives, T5, ...), and the rules that read it. BART's keys are the generic reading;
a family subclasses `Seq2SeqRules` and overrides `traits` (facts the file does not state),
`read_extra` (its own settings) or `read` itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError

POSITION_KINDS = ("learned", "sinusoidal", "relative", "none")
NORM_KINDS = ("layer", "rms")


@dataclass(frozen=True)
class Seq2SeqConfig:
    model_type: str
    vocab_size: int
    d_model: int
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    encoder_kv_heads: int
    decoder_kv_heads: int
    head_dim: int
    encoder_ffn_dim: int
    decoder_ffn_dim: int
    activation: str
    norm_type: str  # "layer" | "rms"
    norm_eps: float
    pre_norm: bool  # norm before each sublayer, plus a final norm per stack (mBART, Pegasus)
    embedding_norm: bool  # BART's layernorm_embedding after tokens + positions
    scale_embedding: bool  # token embeddings times sqrt(d_model)
    position_kind: str  # one of POSITION_KINDS
    max_positions: int
    position_offset: int  # rows before position 0 in a learned table (BART: 2)
    pad_token_id: int | None
    eos_token_id: int | None
    decoder_start_token_id: int
    tie_word_embeddings: bool
    extra: Mapping[str, Any] = field(default_factory=dict)  # a family's own settings

    @property
    def hidden_size(self) -> int:  # the name other layers of the converter read
        return self.d_model

    @property
    def logits_size(self) -> int:
        return self.vocab_size


class Seq2SeqRules:
    """How an encoder-decoder family reads config.json: BART's keys, plus `traits` the file
    does not state (`pre_norm`, `embedding_norm`, `position_kind`, `position_offset`,
    `norm_type`, `norm_eps`) and `read_extra` for a family's own settings."""

    TRAITS = frozenset(
        {"pre_norm", "embedding_norm", "position_kind", "position_offset", "norm_type", "norm_eps"}
    )
    DEFAULT_TRAITS: Mapping[str, Any] = {
        "pre_norm": False,
        "embedding_norm": True,
        "position_kind": "learned",
        "position_offset": 2,
        "norm_type": "layer",
        "norm_eps": 1e-5,  # torch.nn.LayerNorm's, which BART's layers use unstated
    }

    def __init__(self, aliases: Mapping[str, str] | None = None, **traits: Any) -> None:
        unknown = set(traits) - self.TRAITS
        if unknown:
            raise TypeError(f"unknown seq2seq traits: {', '.join(sorted(unknown))}")
        self.traits = {**self.DEFAULT_TRAITS, **traits}
        if self.traits["position_kind"] not in POSITION_KINDS:
            raise TypeError(f"position_kind must be one of {', '.join(POSITION_KINDS)}")
        if self.traits["norm_type"] not in NORM_KINDS:
            raise TypeError(f"norm_type must be one of {', '.join(NORM_KINDS)}")
        self.aliases = aliases or {}

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The section of config.json this family reads (the whole file)."""
        return raw

    def read_extra(self, r: ConfigReader) -> dict[str, Any]:
        return {}

    def refuse_unsupported(self, r: ConfigReader) -> None:
        """Settings transformers honours that the graph does not build: refused by name."""
        if not r.bool("is_encoder_decoder", True):
            r.refuse("is_encoder_decoder", "the seq2seq task builds an encoder and a decoder")
        if r.bool("is_decoder", False):
            r.refuse("is_decoder", "a decoder alone is the causal-LM head (not yet)")

    def heads(self, r: ConfigReader, stack: str) -> int:
        return r.int(f"{stack}_attention_heads")

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        for alias, key in self.aliases.items():
            if r.has(alias):
                r.raw[key] = r.raw[alias]
        self.refuse_unsupported(r)
        d_model = r.int("d_model")
        encoder_heads, decoder_heads = self.heads(r, "encoder"), self.heads(r, "decoder")
        for key, heads in (
            ("encoder_attention_heads", encoder_heads),
            ("decoder_attention_heads", decoder_heads),
        ):
            if d_model % heads:
                raise ConfigError(f"'d_model' = {d_model} is not divisible by '{key}' = {heads}")
        if d_model // encoder_heads != d_model // decoder_heads:
            raise ConfigError(
                "'encoder_attention_heads' and 'decoder_attention_heads' give different head "
                "sizes; the cross-attention cache is laid out by one"
            )
        vocab = r.int("vocab_size", hi=MAX_VOCAB)
        traits = self.traits
        return Seq2SeqConfig(
            model_type=r.model_type,
            vocab_size=vocab,
            d_model=d_model,
            encoder_layers=r.int("encoder_layers", hi=MAX_LAYERS),
            decoder_layers=r.int("decoder_layers", hi=MAX_LAYERS),
            encoder_heads=encoder_heads,
            decoder_heads=decoder_heads,
            encoder_kv_heads=encoder_heads,
            decoder_kv_heads=decoder_heads,
            head_dim=d_model // decoder_heads,
            encoder_ffn_dim=r.int("encoder_ffn_dim", hi=MAX_DIM * 4),
            decoder_ffn_dim=r.int("decoder_ffn_dim", hi=MAX_DIM * 4),
            activation=r.str("activation_function", default="gelu"),
            norm_type=traits["norm_type"],
            norm_eps=traits["norm_eps"],
            pre_norm=traits["pre_norm"],
            embedding_norm=traits["embedding_norm"],
            scale_embedding=r.bool("scale_embedding", False),
            position_kind=traits["position_kind"],
            max_positions=r.int("max_position_embeddings", hi=MAX_POSITIONS),
            position_offset=traits["position_offset"],
            pad_token_id=_token(r, "pad_token_id", vocab),
            eos_token_id=_token(r, "eos_token_id", vocab),
            decoder_start_token_id=self.decoder_start(r, vocab),
            tie_word_embeddings=r.bool("tie_word_embeddings", True),
            extra=self.read_extra(r),
        )

    def decoder_start(self, r: ConfigReader, vocab: int) -> int:
        """The first decoder token: decoder_start_token_id (mBART leaves it unset: its
        generation starts from eos, as transformers' shift_tokens_right does)."""
        start = _token(r, "decoder_start_token_id", vocab)
        if start is None:
            start = _token(r, "eos_token_id", vocab)
        if start is None:
            raise ConfigError("'decoder_start_token_id' is missing from config.json")
        return start


def _token(r: ConfigReader, key: str, vocab: int) -> int | None:
    """One token id (the first of a list), checked against the vocabulary."""
    ids = r.token_ids(key, vocab)
    return ids[0] if ids else None

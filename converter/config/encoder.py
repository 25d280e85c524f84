"""EncoderConfig: the normalized view of a bidirectional encoder's config.json (BERT and its
relatives), and the rules that read it. Decoders read ArchitectureConfig; encoders share no
cache, rope or window settings with them, so they get a dataclass of their own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError

MAX_LABELS = 1 << 16


@dataclass(frozen=True)
class EncoderConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    head_dim: int
    max_position_embeddings: int
    type_vocab_size: int  # rows of the token-type table (0: the family has none)
    token_type_input: bool  # whether the graph reads token_type_ids (else every token is type 0)
    norm_eps: float
    activation: str
    pad_token_id: int | None
    # position ids start here (RoBERTa: padding_idx + 1, counting only unpadded tokens)
    position_offset: int
    num_labels: int  # rows of a classification head (len(id2label))
    embedding_size: int  # width of the embedding tables (ALBERT, ELECTRA: may differ)
    extra: Mapping[str, Any]  # family-specific settings its rules read (see each family)


class EncoderRules:
    """How an encoder family reads config.json: BERT's keys, plus `traits` the file does not
    state (`roberta_positions`: RoBERTa's padding-aware position ids; `token_types`: False for
    families without a token-type table; `token_type_input`: False where the tokenizer gives no
    token_type_ids and every token is type 0) and `read_extra` for a family's own settings."""

    TRAITS = frozenset({"roberta_positions", "token_types", "token_type_input"})
    position_types = ("absolute",)  # the position_embedding_type values the family builds

    def __init__(self, aliases: Mapping[str, str] | None = None, **traits: Any) -> None:
        unknown = set(traits) - self.TRAITS
        if unknown:
            raise TypeError(f"unknown encoder traits: {', '.join(sorted(unknown))}")
        self.traits, self.aliases = traits, aliases or {}

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The section of config.json this family reads (the whole file for encoders)."""
        return raw

    def read_extra(self, r: ConfigReader) -> dict[str, Any]:
        return {}

    def read(self, r: ConfigReader) -> EncoderConfig:
        for alias, key in self.aliases.items():
            if r.has(alias):
                r.raw[key] = r.raw[alias]
        if r.bool("is_decoder", False):
            r.refuse("is_decoder", "causal self-attention is the causal-LM scope (not yet)")
        hidden = r.int("hidden_size", "dim", "d_model")
        heads = r.int("num_attention_heads", "n_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        vocab = r.int("vocab_size", hi=MAX_VOCAB)
        position_type = r.get("position_embedding_type", default="absolute")
        if position_type not in self.position_types:
            built = ", ".join(self.position_types)
            r.refuse("position_embedding_type", f"{r.model_type} builds {built} positions")
        token_types = self.traits.get("token_types", True)
        pad = r.get("pad_token_id")
        if pad is not None:
            pad = r.int("pad_token_id", lo=0, hi=vocab - 1)
        roberta = self.traits.get("roberta_positions", False)
        if roberta and pad is None:
            raise ConfigError("'pad_token_id' is missing: RoBERTa-style positions count from it")
        return EncoderConfig(
            model_type=r.model_type,
            vocab_size=vocab,
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", "hidden_dim", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", "n_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            head_dim=hidden // heads,
            max_position_embeddings=r.int("max_position_embeddings", hi=MAX_POSITIONS),
            type_vocab_size=r.int("type_vocab_size", default=2, lo=0) if token_types else 0,
            token_type_input=token_types and self.traits.get("token_type_input", True),
            norm_eps=r.float("layer_norm_eps", "layer_norm_epsilon", default=1e-12),
            activation=r.str("hidden_act", "activation", default="gelu"),
            pad_token_id=pad,
            position_offset=pad + 1 if roberta else 0,
            num_labels=_num_labels(r),
            embedding_size=r.int("embedding_size", default=hidden),
            extra=self.read_extra(r),
        )


def _num_labels(r: ConfigReader) -> int:
    labels = r.raw.get("id2label")
    if labels is None:
        return r.int("num_labels", default=2, hi=MAX_LABELS)
    if not isinstance(labels, dict) or not labels:
        raise ConfigError("'id2label' must map label ids to names")
    if len(labels) > MAX_LABELS:
        raise ConfigError(f"'id2label' holds {len(labels)} labels, more than {MAX_LABELS}")
    return len(labels)

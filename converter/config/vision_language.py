"""VisionLanguageConfig: the normalized view of a vision-language model's config.json (LLaVA,
Qwen2.5-VL, ...): its text model read by that model's own family rules (an
ArchitectureConfig, so the decoder is the text-generation decoder of that family), its vision
tower read by the VLM family's rules, and what joins them (the image token, the projector's
settings in `extra`).

The text section is read over the defaults of its own `model_type` (`text_config.model_type`,
else the family's `text_type`); the vision section over the defaults of the family's
`vision_type`; every error names the section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from converter.config.architecture import ArchitectureConfig
from converter.config.reader import MAX_VOCAB, ConfigReader
from converter.errors import ConfigError


@dataclass(frozen=True)
class VisionLanguageConfig:
    model_type: str
    text: ArchitectureConfig  # the decoder's config, as its text family reads it
    text_type: str  # the text family's model_type (whose model class builds the decoder)
    vision: Any  # the tower's config, as the VLM family's rules read it
    image_token_id: int  # the placeholder id whose rows the image features replace
    extra: Mapping[str, Any]  # the family's own settings (projector, feature layers, ...)

    @property
    def vocab_size(self) -> int:
        return self.text.vocab_size

    @property
    def tie_word_embeddings(self) -> bool:
        return self.text.tie_word_embeddings


class VisionLanguageRules:
    """How a VLM family reads config.json: the whole file (`select`); `text_type` is the text
    model's type when `text_config` does not name one; `read_vision` reads `vision_config`
    (over the defaults of `vision_type`) and `read_extra` the top-level settings the family
    uses; `image_token_keys` are the spellings of the image token id."""

    text_type = "llama"
    text_family: str | None = None  # whose rules and decoder read the text section, if not its type
    vision_type = ""
    image_token_keys: tuple[str, ...] = ("image_token_id", "image_token_index")
    # transformers ties the head by the top-level tie_word_embeddings; LLaVA's and Qwen-VL's
    # configs also honour the text section's (where saves before transformers 5 put it); the
    # families whose configs read the top level only set this False
    tie_from_text = True

    @property
    def nested_types(self) -> tuple[str, ...]:
        """The section types whose transformers defaults config_defaults.json holds (the text
        section's own when another family reads it)."""
        return (self.vision_type, *((self.text_type,) if self.text_family else ()))

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        return raw

    def read(self, r: ConfigReader) -> VisionLanguageConfig:
        text_raw = section(r, "text_config")
        text_type = text_raw.get("model_type") or self.text_type
        text = read_section("text_config", lambda: self.read_text(text_raw, text_type))
        text_type = self.text_family or text_type
        tied = r.bool("tie_word_embeddings", False)
        tied = tied or (self.tie_from_text and text.tie_word_embeddings)
        if tied != text.tie_word_embeddings:
            text = replace(text, tie_word_embeddings=tied)
        vision_raw = section(r, "vision_config")
        vision = read_section(
            "vision_config", lambda: self.read_vision(ConfigReader(vision_raw, self.vision_type))
        )
        image_token = r.int(*self.image_token_keys, lo=0, hi=MAX_VOCAB)
        if image_token >= text.vocab_size:
            raise ConfigError(
                f"'{self.image_token_keys[0]}' = {image_token} is outside the text model's "
                f"vocabulary (vocab_size {text.vocab_size})"
            )
        return VisionLanguageConfig(
            r.model_type, text, text_type, vision, image_token, self.read_extra(r, text, vision)
        )

    def read_text(self, raw: dict[str, Any], text_type: str) -> ArchitectureConfig:
        from converter.registry import family_for

        family = family_for(self.text_family or text_type)
        if family.task != "text-generation":
            raise ConfigError(f"'model_type' = {text_type!r} is not a text-generation family")
        return family.rules.read(ConfigReader(raw, text_type))

    def read_vision(self, r: ConfigReader) -> Any:
        raise NotImplementedError

    def read_extra(self, r: ConfigReader, text: ArchitectureConfig, vision: Any) -> dict:
        return {}


def section(r: ConfigReader, key: str) -> dict[str, Any]:
    raw = r.raw.get(key) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"'{key}' must be a JSON object")
    return raw


def read_section(key: str, read):
    """`read()`, its ConfigErrors naming the section."""
    try:
        return read()
    except ConfigError as err:
        raise ConfigError(f"{key}: {err}") from None

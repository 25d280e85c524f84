"""ConformerConfig: the normalized view of a mel-feature Conformer CTC model's config.json
(transformers' Parakeet and LASR: the top level holds the vocabulary, `encoder_config` the
encoder), and the rules that read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError

MAX_KERNEL = 1 << 12


@dataclass(frozen=True)
class ConformerConfig:
    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    head_dim: int
    activation: str  # of the feed-forwards and the convolution module
    norm_eps: float
    norm_bias: bool  # whether the LayerNorms have a bias
    attention_bias: bool  # of the attention and feed-forward projections
    convolution_bias: bool  # of the convolution module's convs
    conv_kernel_size: int  # of the depthwise conv
    mel_bins: int  # input_features [batch, frames, mel_bins]
    subsampling_channels: int
    subsampling_kernel: int
    subsampling_stride: int
    vocab_size: int  # rows of the CTC head
    extra: Mapping[str, Any]  # family-specific settings its rules read (see each family)
    uses_attention_mask: bool = True  # the processor always returns one


class ConformerRules:
    """`encoder_type`: the transformers type of `encoder_config`, over whose defaults it is
    read; `norm_eps`: the LayerNorms' fixed epsilon where the config states none (None: its
    `layer_norm_eps`); `norm_bias`: whether they have a bias; `read_extra` reads a family's own
    encoder settings."""

    def __init__(self, encoder_type: str, norm_eps: float | None, norm_bias: bool) -> None:
        self.encoder_type, self.norm_eps, self.norm_bias = encoder_type, norm_eps, norm_bias

    @property
    def nested_types(self) -> tuple[str]:
        return (self.encoder_type,)

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        return raw

    def read_extra(self, r: ConfigReader) -> dict[str, Any]:
        return {}

    def read_subsampling(self, r: ConfigReader) -> tuple[int, int, int]:
        """The subsampling convs' channels, kernel and stride."""
        return (
            r.int("subsampling_conv_channels"),
            r.int("subsampling_conv_kernel_size", hi=MAX_KERNEL),
            r.int("subsampling_conv_stride", hi=MAX_KERNEL),
        )

    def read(self, top: ConfigReader) -> ConformerConfig:
        section = top.raw.get("encoder_config") or {}
        if not isinstance(section, dict):
            raise ConfigError("'encoder_config' must be a JSON object")
        r = ConfigReader(section, self.encoder_type)
        hidden = r.int("hidden_size")
        heads = r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        if r.get("head_dim", default=hidden // heads) != hidden // heads:
            r.refuse("head_dim", "heads narrower or wider than hidden_size / heads are not built")
        if r.get("num_key_value_heads", default=heads) != heads:
            r.refuse("num_key_value_heads", "keys and values have a head per query head here")
        eps = r.float("layer_norm_eps") if self.norm_eps is None else self.norm_eps
        channels, kernel, stride = self.read_subsampling(r)
        return ConformerConfig(
            model_type=top.model_type,
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            head_dim=hidden // heads,
            activation=r.str("hidden_act"),
            norm_eps=eps,
            norm_bias=self.norm_bias,
            attention_bias=r.bool("attention_bias", True),
            convolution_bias=r.bool("convolution_bias", True),
            conv_kernel_size=r.int("conv_kernel_size", hi=MAX_KERNEL),
            mel_bins=r.int("num_mel_bins"),
            subsampling_channels=channels,
            subsampling_kernel=kernel,
            subsampling_stride=stride,
            vocab_size=top.int("vocab_size", hi=MAX_VOCAB),
            extra=self.read_extra(r),
        )

"""AudioEncoderConfig: the normalized view of a speech encoder's config.json (wav2vec2 and the
families built on its layout: a convolutional feature encoder over the raw waveform, a
projection, a positional convolution and bidirectional transformer layers), and the rules that
read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from converter.config.encoder import _num_labels
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError

MAX_CONV_LAYERS = 64
MAX_KERNEL = 1 << 12
FEATURE_NORMS = ("group", "layer")


@dataclass(frozen=True)
class ConvLayer:
    """One layer of the feature encoder: a Conv1d from the previous layer's channels."""

    channels: int
    kernel: int
    stride: int


@dataclass(frozen=True)
class AudioEncoderConfig:
    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    head_dim: int
    norm_eps: float  # the transformer's LayerNorms (the conv stack's use torch's 1e-5)
    activation: str  # of the feed-forward blocks
    conv_layers: tuple[ConvLayer, ...]
    conv_bias: bool
    # "group": GroupNorm (one group per channel) after the first conv only; "layer": a
    # LayerNorm over channels after every conv
    feat_extract_norm: str
    feat_extract_activation: str  # of the conv stack and the positional convolution
    pos_conv_kernel: int
    pos_conv_groups: int
    stable_layer_norm: bool  # pre-norm layers and a final LayerNorm (else post-norm)
    # whether the graph reads attention_mask: transformers' processors return one for
    # layer-norm feature encoders only (a group norm's statistics span the padding anyway)
    uses_attention_mask: bool
    vocab_size: int  # rows of the CTC head (0: the config states none)
    num_labels: int  # rows of the audio-classification head
    classifier_proj_size: int
    use_weighted_layer_sum: bool  # audio classification pools a softmax-weighted layer sum
    extra: Mapping[str, Any]  # family-specific settings its rules read (see each family)

    @property
    def conv_dim(self) -> int:
        """Channels out of the feature encoder."""
        return self.conv_layers[-1].channels


class AudioRules:
    """How a speech-encoder family reads config.json: wav2vec2's keys, plus `traits` the file
    does not state (`feat_extract_norm`, `stable_layer_norm`: fixed by families whose configs
    have no such key) and `read_extra` for a family's own settings. Options it does not build
    are refused by name."""

    TRAITS = frozenset({"feat_extract_norm", "stable_layer_norm"})

    def __init__(self, **traits: Any) -> None:
        unknown = set(traits) - self.TRAITS
        if unknown:
            raise TypeError(f"unknown audio traits: {', '.join(sorted(unknown))}")
        self.traits = traits

    def select(self, raw: dict[str, Any]) -> dict[str, Any]:
        return raw

    def read_extra(self, r: ConfigReader) -> dict[str, Any]:
        return {}

    def pos_conv_kernel(self, r: ConfigReader) -> int:
        return r.int("num_conv_pos_embeddings", hi=MAX_KERNEL)

    def read(self, r: ConfigReader) -> AudioEncoderConfig:
        hidden = r.int("hidden_size")
        heads = r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        if r.bool("add_adapter", False):
            r.refuse("add_adapter", "the convolutional adapter after the encoder is not built")
        if r.get("adapter_attn_dim") is not None:
            r.refuse("adapter_attn_dim", "per-language attention adapters (MMS) are not built")
        norm = self.traits.get("feat_extract_norm") or r.str("feat_extract_norm")
        if norm not in FEATURE_NORMS:
            raise ConfigError(f"'feat_extract_norm' = {norm!r} must be one of {FEATURE_NORMS}")
        stable = self.traits.get("stable_layer_norm")
        pos_groups = r.int("num_conv_pos_embedding_groups")
        if hidden % pos_groups:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by "
                f"'num_conv_pos_embedding_groups' = {pos_groups}"
            )
        return AudioEncoderConfig(
            model_type=r.model_type,
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            head_dim=hidden // heads,
            norm_eps=r.float("layer_norm_eps", default=1e-5),
            activation=r.str("hidden_act", default="gelu"),
            conv_layers=_conv_layers(r),
            conv_bias=r.bool("conv_bias", False),
            feat_extract_norm=norm,
            feat_extract_activation=r.str("feat_extract_activation", default="gelu"),
            pos_conv_kernel=self.pos_conv_kernel(r),
            pos_conv_groups=pos_groups,
            stable_layer_norm=r.bool("do_stable_layer_norm", False) if stable is None else stable,
            uses_attention_mask=norm == "layer",
            vocab_size=r.int("vocab_size", hi=MAX_VOCAB) if r.has("vocab_size") else 0,
            num_labels=_num_labels(r),
            classifier_proj_size=r.int("classifier_proj_size", default=256),
            use_weighted_layer_sum=r.bool("use_weighted_layer_sum", False),
            extra=self.read_extra(r),
        )


def _conv_layers(r: ConfigReader) -> tuple[ConvLayer, ...]:
    lists = {key: r.get(key) for key in ("conv_dim", "conv_kernel", "conv_stride")}
    for key, values in lists.items():
        if (
            not isinstance(values, list | tuple)
            or not 0 < len(values) <= MAX_CONV_LAYERS
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values)
        ):
            raise ConfigError(f"'{key}' must list positive integers, got {values!r}")
    if len({len(values) for values in lists.values()}) != 1:
        raise ConfigError("'conv_dim', 'conv_kernel' and 'conv_stride' must be equally long")
    layers = tuple(
        ConvLayer(dim, kernel, stride) for dim, kernel, stride in zip(*lists.values(), strict=True)
    )
    if any(x.channels > MAX_DIM or x.kernel > MAX_KERNEL or x.stride > MAX_KERNEL for x in layers):
        raise ConfigError("'conv_dim', 'conv_kernel' or 'conv_stride' holds an absurd value")
    count = r.get("num_feat_extract_layers")
    if count is not None and count != len(layers):
        raise ConfigError(
            f"'num_feat_extract_layers' = {count!r} but 'conv_dim' lists {len(layers)} layers"
        )
    return layers

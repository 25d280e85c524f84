"""W2vBertConfig: the normalized view of a wav2vec2-BERT config.json (Conformer layers over
stacked mel features, Shaw relative-key attention), and the rules that read it."""

from __future__ import annotations

from dataclasses import dataclass

from converter.config.encoder import _num_labels
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError

MAX_KERNEL = 1 << 12
# Shaw's clamped distances, Transformer-XL's relative positions, rotary, none
POSITIONS = ("relative_key", "relative", "rotary", None)


@dataclass(frozen=True)
class Adapter:
    """Layers each halving (`stride`) the frames with strided convs, then attention and a
    feed-forward at `hidden_size` (projected to it first where it differs)."""

    hidden_size: int
    layers: int
    kernel: int
    stride: int
    activation: str  # of its feed-forwards


@dataclass(frozen=True)
class W2vBertConfig:
    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    head_dim: int
    norm_eps: float
    activation: str  # of the feed-forwards and the convolution module
    mel_bins: int  # input_features [batch, frames, mel_bins] (stacked mel frames)
    depthwise_kernel: int  # the convolution module's causal depthwise conv
    positions: str | None  # one of POSITIONS
    rotary_base: float
    left_positions: int  # distances clamped to [-left_positions, right_positions]
    right_positions: int
    vocab_size: int  # rows of the CTC head (0: the config states none)
    num_labels: int
    classifier_proj_size: int
    use_weighted_layer_sum: bool
    # hidden + ffn(hidden) / 2 after the encoder, its feed-forward in ReLU
    intermediate_ffn: bool
    adapter: Adapter | None  # the convolutional adapter after the encoder (add_adapter)
    uses_attention_mask: bool = True  # the processor always returns one

    @property
    def conv_dim(self) -> int:
        """Features into the projection (FeatureProjection's name for them)."""
        return self.mel_bins

    @property
    def extra(self) -> dict:
        """What wav2vec2-Conformer's attention reads, for the positions it shares."""
        return {"positions": self.positions}

    @property
    def output_size(self) -> int:
        """Width of the hidden states the heads read."""
        return self.hidden_size if self.adapter is None else self.adapter.hidden_size


class W2vBertRules:
    def select(self, raw):
        return raw

    def read(self, r: ConfigReader) -> W2vBertConfig:
        hidden = r.int("hidden_size")
        heads = r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        positions = r.get("position_embeddings_type")
        if positions not in POSITIONS:
            r.refuse("position_embeddings_type", f"one of {POSITIONS} is built")
        kernel = r.int("conv_depthwise_kernel_size", hi=MAX_KERNEL)
        if kernel % 2 == 0:
            r.refuse("conv_depthwise_kernel_size", "transformers requires an odd kernel")
        return W2vBertConfig(
            model_type=r.model_type,
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            head_dim=hidden // heads,
            norm_eps=r.float("layer_norm_eps", default=1e-5),
            activation=r.str("hidden_act", default="swish"),
            mel_bins=r.int("feature_projection_input_dim"),
            depthwise_kernel=kernel,
            positions=positions,
            rotary_base=r.float("rotary_embedding_base", default=10000.0),
            left_positions=r.int("left_max_position_embeddings", lo=0),
            right_positions=r.int("right_max_position_embeddings", lo=0),
            vocab_size=r.int("vocab_size", hi=MAX_VOCAB) if r.has("vocab_size") else 0,
            num_labels=_num_labels(r),
            classifier_proj_size=r.int("classifier_proj_size", default=768),
            use_weighted_layer_sum=r.bool("use_weighted_layer_sum", False),
            intermediate_ffn=r.bool("use_intermediate_ffn_before_adapter", False),
            adapter=_adapter(r, hidden, heads) if r.bool("add_adapter", False) else None,
        )


def _adapter(r: ConfigReader, hidden: int, heads: int) -> Adapter:
    size = r.int("output_hidden_size", default=hidden)
    if size % heads:
        raise ConfigError(
            f"'output_hidden_size' = {size} is not divisible by 'num_attention_heads' = {heads}"
        )
    kernel, stride = r.int("adapter_kernel_size", hi=MAX_KERNEL), r.int("adapter_stride")
    if kernel // 2 != stride // 2:
        # transformers pads the convs by stride // 2 but counts the frames padded by kernel // 2
        raise ConfigError(
            f"'adapter_kernel_size' = {kernel} and 'adapter_stride' = {stride}: the convs' "
            "padding (stride // 2) differs from the one their frame counts assume (kernel // 2)"
        )
    return Adapter(
        hidden_size=size,
        layers=r.int("num_adapter_layers", hi=MAX_LAYERS),
        kernel=kernel,
        stride=stride,
        activation=r.str("adapter_act"),
    )

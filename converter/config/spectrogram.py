"""SpectrogramConfig: the normalized view of the Audio Spectrogram Transformer's config.json (a
ViT over the log-mel spectrogram), and the rules that read it."""

from __future__ import annotations

from dataclasses import dataclass

from converter.config.encoder import _num_labels
from converter.config.reader import MAX_DIM, MAX_LAYERS, ConfigReader
from converter.errors import ConfigError

MAX_FRAMES = 1 << 16


@dataclass(frozen=True)
class SpectrogramConfig:
    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    head_dim: int
    norm_eps: float
    activation: str
    patch_size: int
    frequency_stride: int
    time_stride: int
    max_length: int  # spectrogram frames: the processor pads or cuts every input to these
    num_mel_bins: int
    num_labels: int
    uses_attention_mask: bool = False  # every input has the same frames
    vocab_size: int = 0  # no vocabulary

    @property
    def spectrogram_shape(self) -> tuple[int, int]:
        """input_values' [frames, mel bins] after the batch axis."""
        return self.max_length, self.num_mel_bins

    @property
    def patches(self) -> int:
        """Patch embeddings: the conv's positions over frequency times those over time."""
        frequencies = (self.num_mel_bins - self.patch_size) // self.frequency_stride + 1
        times = (self.max_length - self.patch_size) // self.time_stride + 1
        return frequencies * times


class SpectrogramRules:
    def select(self, raw: dict) -> dict:
        return raw

    def read(self, r: ConfigReader) -> SpectrogramConfig:
        hidden = r.int("hidden_size")
        heads = r.int("num_attention_heads")
        if hidden % heads:
            raise ConfigError(
                f"'hidden_size' = {hidden} is not divisible by 'num_attention_heads' = {heads}"
            )
        if r.get("head_dim", default=hidden // heads) != hidden // heads:
            r.refuse("head_dim", "heads narrower or wider than hidden_size / heads are not built")
        if not r.bool("qkv_bias", True):
            r.refuse("qkv_bias", "query, key and value projections without biases are not built")
        patch = r.int("patch_size", hi=MAX_FRAMES)
        frames = r.int("max_length", hi=MAX_FRAMES)
        bins = r.int("num_mel_bins", hi=MAX_FRAMES)
        if patch > min(frames, bins):
            raise ConfigError(
                f"'patch_size' = {patch} exceeds 'max_length' = {frames} or 'num_mel_bins' = {bins}"
            )
        return SpectrogramConfig(
            model_type=r.model_type,
            hidden_size=hidden,
            intermediate_size=r.int("intermediate_size", hi=MAX_DIM * 4),
            num_hidden_layers=r.int("num_hidden_layers", hi=MAX_LAYERS),
            num_attention_heads=heads,
            head_dim=hidden // heads,
            norm_eps=r.float("layer_norm_eps", default=1e-12),
            activation=r.str("hidden_act", default="gelu"),
            patch_size=patch,
            frequency_stride=r.int("frequency_stride", hi=MAX_FRAMES),
            time_stride=r.int("time_stride", hi=MAX_FRAMES),
            max_length=frames,
            num_mel_bins=bins,
            num_labels=_num_labels(r),
        )

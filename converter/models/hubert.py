"""HuBERT: wav2vec2's layout (models/speech_encoder.py) whose feature projection may skip its
LayerNorm (`feat_proj_layer_norm`) and whose positional convolution may batch-normalise its
input instead of weight-normalising its kernel (`conv_pos_batch_norm`)."""

from __future__ import annotations

from converter.components.batch_norm import BATCH_NORM_UNUSED, BatchNorm1d
from converter.config.audio import AudioRules
from converter.models.speech_encoder import SpeechBody, SpeechEncoder, SpeechEncoderModel
from converter.models.speech_features import FeatureProjection, PositionalConvEmbedding
from converter.models.wav2vec2 import PRETRAINING_ONLY
from converter.registry import Family


class HubertRules(AudioRules):
    def read_extra(self, r):
        return {
            "feat_proj_layer_norm": r.bool("feat_proj_layer_norm", True),
            "conv_pos_batch_norm": r.bool("conv_pos_batch_norm", False),
        }


class BatchNormPositionalConv(PositionalConvEmbedding):
    """The positional convolution over batch-normalised frames, its kernel stored plainly."""

    def __init__(self, cfg, dtype):
        super().__init__(cfg, dtype, weight_norm=None)
        self.batch_norm = BatchNorm1d(cfg.hidden_size, dtype)

    def convolve(self, op, x):
        return super().convolve(op, self.batch_norm(op, x))


class HubertEncoder(SpeechEncoder):
    def make_positions(self, cfg, dtype, weight_norm):
        if cfg.extra["conv_pos_batch_norm"]:
            return BatchNormPositionalConv(cfg, dtype)
        return super().make_positions(cfg, dtype, weight_norm)


class HubertBody(SpeechBody):
    encoder_cls = HubertEncoder

    def make_projection(self, cfg, dtype):
        return FeatureProjection(cfg, dtype, norm=cfg.extra["feat_proj_layer_norm"])


class HubertModel(SpeechEncoderModel):
    body_cls = HubertBody
    body_name = "hubert"


FAMILIES = [
    Family(
        "hubert",
        HubertModel,
        "wav2vec2's layout; optional projection norm, optional batch-normalised positional "
        "convolution",
        ("facebook/hubert-large-ls960-ft", "superb/hubert-large-superb-er"),
        rules=HubertRules(),
        task="feature-extraction",
        category="audio",
        unused=(*PRETRAINING_ONLY, BATCH_NORM_UNUSED),
        prefix="hubert.",
    ),
]

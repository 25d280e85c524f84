"""OmniASR-CTC: wav2vec2's large layout (layer-norm feature convs, pre-norm layers; models/
speech_encoder.py) under other names. Its settings sit in a nested `audio_config` (an
`omniasr_audio`) whose `hidden_act` also activates the convolutions; the positional conv is a
plain (not weight-normalised) one whose last frame is always dropped, so its kernel must be even.
The processor's waveform is [batch, 1, samples] and its sample mask is `padding_mask`."""

from __future__ import annotations

import dataclasses

from converter.config.audio import AudioRules
from converter.config.reader import MAX_VOCAB, ConfigReader
from converter.errors import ConfigError
from converter.models.speech_encoder import SpeechBody, SpeechEncoderModel
from converter.registry import Family
from converter.tasks.audio_encoding import AudioInputs

AUDIO_TYPE = "omniasr_audio"

# the checkpoint's names onto wav2vec2's module paths (OmniASRCTCModel's lack `model.`)
TOWER = r"^(model\.)?audio_tower\."
OMNIASR_RENAMES = (
    (TOWER + r"subsampling\.conv_layers\.", "wav2vec2.feature_extractor.conv_layers."),
    (TOWER + r"subsampling\.", "wav2vec2.feature_projection."),
    (TOWER + r"encode_positions\.", "wav2vec2.encoder.pos_conv_embed."),
    (TOWER, "wav2vec2.encoder."),
    (r"^ctc_head\.", "lm_head."),
)


class OmniASRRules(AudioRules):
    nested_types = (AUDIO_TYPE,)  # scripts/gen_config_defaults.py: the section's defaults

    def __init__(self):
        super().__init__(feat_extract_norm="layer", stable_layer_norm=True)

    def read(self, r: ConfigReader):
        section = r.get("audio_config", default={})
        if not isinstance(section, dict):
            raise ConfigError("'audio_config' must be a JSON object")
        audio = ConfigReader(section, AUDIO_TYPE)
        audio.alias(hidden_act="feat_extract_activation")
        try:
            cfg = super().read(audio)
        except ConfigError as err:
            raise ConfigError(f"audio_config: {err}") from None
        if cfg.pos_conv_kernel % 2:
            raise ConfigError(
                f"audio_config: 'num_conv_pos_embeddings' = {cfg.pos_conv_kernel} must be even "
                "(the positional conv's last frame is always dropped)"
            )
        return dataclasses.replace(
            cfg, model_type=r.model_type, vocab_size=r.int("vocab_size", hi=MAX_VOCAB)
        )


class MonoBody(SpeechBody):
    """The body over the processor's [batch, 1, samples] waveform."""

    def forward(self, op, inputs: AudioInputs):
        mono = op.Squeeze(inputs.input_values, [1])
        return super().forward(op, AudioInputs(mono, inputs.attention_mask))


class OmniASRModel(SpeechEncoderModel):
    body_cls = MonoBody
    heads = ("automatic-speech-recognition", "feature-extraction")
    waveform_channels = 1  # tasks/audio_encoding.py: input_values [batch, 1, samples]
    mask_input = "padding_mask"


FAMILIES = [
    Family(
        "omniasr_ctc",
        OmniASRModel,
        "wav2vec2's large layout under other names: layer-norm feature convs, plain positional "
        "convolution, pre-norm layers; waveform [batch, 1, samples] with its padding_mask",
        ("hf-audio/omniasr-ctc-300m-v2",),
        rules=OmniASRRules(),
        task="automatic-speech-recognition",
        category="audio",
        renames=OMNIASR_RENAMES,
    ),
]

"""Encoder-decoder and speech-to-text model types of the pinned transformers that mobius does
not convert yet, each with its category and the reason. The seq2seq scope is every type of
transformers' MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES and
MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES (tests/test_seq2seq_coverage.py holds each to being
registered, and then parity-tested, or listed here). Several of those mappings' types are
audio language models (an audio tower feeding a decoder-only LM), not encoder-decoders: they
are listed with that reason."""

AUDIO_LM = (
    "an audio language model, not an encoder-decoder: its audio tower's features are "
    "projected into the token sequence of a decoder-only LM ({}), which needs an audio-LLM "
    "layout (audio encoder + embedding + decoder graphs) that is not built yet"
)
SEQ2SEQ_NOT_YET: dict[str, tuple[str, str]] = {
    "audioflamingo3": ("speech", AUDIO_LM.format("Qwen2 behind a Whisper-style encoder")),
    "canary": (
        "speech",
        "a Parakeet FastConformer encoder (convolution modules, relative-position attention, "
        "subsampling convolutions) under a transformer decoder: the conformer encoder is not "
        "built",
    ),
    "cohere_asr": (
        "speech",
        "a Parakeet FastConformer encoder (convolution modules, relative-position attention, "
        "subsampling convolutions) under a transformer decoder: the conformer encoder is not "
        "built",
    ),
    "dia": (
        "speech",
        "text-to-speech, not speech-to-text: a decoder over several audio codebooks (a "
        "multi-channel embedding, delay-pattern generation) that outputs audio codes for a "
        "DAC codec, with no text logits to generate",
    ),
    "fun_asr_nano": (
        "speech",
        AUDIO_LM.format("a Qwen-style LM behind an FSMN-memory (SAN-M) audio encoder"),
    ),
    "glmasr": ("speech", AUDIO_LM.format("a Llama-style LM behind a rotary audio encoder")),
    "granite_speech": (
        "speech",
        AUDIO_LM.format("Granite behind a Conformer CTC encoder and a Q-Former projector"),
    ),
    "granite_speech_plus": (
        "speech",
        AUDIO_LM.format("Granite behind a Conformer CTC encoder and a Q-Former projector"),
    ),
    "kyutai_speech_to_text": (
        "speech",
        "a streaming decoder-only model over audio codec frames (Mimi codes, a conv padding "
        "cache between calls) and text, not an encoder-decoder: its audio codec and cache are "
        "not built",
    ),
    "moonshine_streaming": (
        "speech",
        "Moonshine's streaming variant: a causal-conv encoder with per-frame CMVN and asinh "
        "compression, run over chunks with a sliding window; onnxruntime-genai 0.18 runs it as "
        "its streaming_enc_dec_asr type from five graphs (frontend, encoder, adapter, cross_kv, "
        "decoder_kv, float32 only): neither the model nor that layout is built yet",
    ),
    "moss_transcribe_diarize": (
        "speech",
        AUDIO_LM.format("a Qwen-style LM behind a Whisper-style encoder"),
    ),
    "musicflamingo": ("speech", AUDIO_LM.format("Qwen2 behind a rotary audio encoder")),
    "nemo_speechlm": (
        "speech",
        AUDIO_LM.format("a Nemotron LM behind a FastConformer audio encoder"),
    ),
    "omniasr": ("speech", AUDIO_LM.format("a Llama-style LM behind a wav2vec2-style encoder")),
    "pop2piano": (
        "speech",
        "T5's layout over a mel spectrogram input concatenated with a composer embedding; "
        "generates MIDI tokens: the spectrogram front end is not built",
    ),
    "prophetnet": (
        "seq2seq",
        "n-stream self-attention in the decoder: the logits come from the first of `ngram` "
        "predicting streams, which attend to the cached main stream and to themselves, and "
        "every stream's relative-position bias is read per query from a projection of its "
        "hidden state (buckets x heads); that decoder is not built",
    ),
    "qwen2_audio": ("speech", AUDIO_LM.format("Qwen2 behind a Whisper encoder")),
    "qwen3_asr": ("speech", AUDIO_LM.format("Qwen3 behind a sinusoidal audio encoder")),
    "seamless_m4t": (
        "speech",
        "SeamlessM4T's text-to-text head shares a multi-task model (speech encoder, text "
        "encoder-decoder, unit decoder, vocoder) whose checkpoints hold all parts: "
        "selecting and converting its text encoder-decoder is not built yet",
    ),
    "seamless_m4t_v2": (
        "speech",
        "SeamlessM4T v2's text-to-text head shares a multi-task model (speech encoder, text "
        "encoder-decoder, unit decoder, vocoder) whose checkpoints hold all parts: "
        "selecting and converting its text encoder-decoder is not built yet",
    ),
    "speech-encoder-decoder": (
        "speech",
        "SpeechEncoderDecoderModel composes a speech encoder (wav2vec2, ...) with a causal "
        "decoder given cross-attention: composed pairs are not built yet",
    ),
    "speecht5": (
        "speech",
        "SpeechT5's speech-to-text head: a speech pre-net (wav2vec2-like feature encoder), "
        "relative position biases in the encoder and its own text post-net: not built yet",
    ),
    "t5gemma2": (
        "seq2seq",
        "Gemma 3 layers as encoder and decoder with a merged self/cross attention and a "
        "vision tower for multimodal inputs: not built yet",
    ),
    "vibevoice": (
        "speech",
        "text-to-speech: a Qwen2 LM with a diffusion head over acoustic latents; no text "
        "logits to generate from speech",
    ),
    "vibevoice_asr": (
        "speech",
        AUDIO_LM.format("Qwen2 behind causal-conv acoustic and semantic tokenizers"),
    ),
    "voxtral": ("speech", AUDIO_LM.format("a Mistral LM behind a Whisper-style encoder")),
    "voxtral_realtime": (
        "speech",
        AUDIO_LM.format("a Mistral LM behind a causal-conv streaming encoder with conv caches"),
    ),
}

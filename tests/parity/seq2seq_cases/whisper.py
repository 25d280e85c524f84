from tests.parity.seq2seq_cases import Seq2SeqCase

# 1500 encoder positions (3000 log-mel frames): what onnxruntime-genai's whisper layout feeds,
# which every whisper package also holds
WHISPER_SIZES = {
    "model_type": "whisper",
    "vocab_size": 128,
    "num_mel_bins": 16,
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 96,
    "decoder_ffn_dim": 96,
    "max_source_positions": 1500,
    "max_target_positions": 32,
    "pad_token_id": 2,
    "bos_token_id": 2,
    "eos_token_id": 2,
    "decoder_start_token_id": 1,
    "begin_suppress_tokens": None,
}
SPEECH = {"model_class": "AutoModelForSpeechSeq2Seq", "inputs": "log-mel"}

CASES = {
    "whisper": Seq2SeqCase(WHISPER_SIZES, **SPEECH),
    # distil-whisper's shape: more encoder than decoder layers (one cross cache per decoder
    # layer), and an untied head
    "whisper:distil-untied": Seq2SeqCase(
        {**WHISPER_SIZES, "encoder_layers": 3, "decoder_layers": 1, "tie_word_embeddings": False},
        **SPEECH,
    ),
}

from tests.parity.seq2seq_cases import Seq2SeqCase

MOONSHINE_SIZES = {
    "model_type": "moonshine",
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "encoder_num_hidden_layers": 2,
    "decoder_num_hidden_layers": 2,
    "encoder_num_attention_heads": 4,
    "decoder_num_attention_heads": 4,
    "max_position_embeddings": 64,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "decoder_start_token_id": 1,
}
SPEECH = {"model_class": "AutoModelForSpeechSeq2Seq", "inputs": "waveform"}

CASES = {
    # 16-wide heads rotated in their first 14 dims (partial_rotary_factor 0.9)
    "moonshine": Seq2SeqCase(MOONSHINE_SIZES, **SPEECH),
    "moonshine:bias-untied-half-rotary": Seq2SeqCase(
        {
            **MOONSHINE_SIZES,
            "attention_bias": True,
            "tie_word_embeddings": False,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 500.0,
                "partial_rotary_factor": 0.5,
            },
            "encoder_hidden_act": "relu",
        },
        **SPEECH,
    ),
}

from tests.parity.seq2seq_cases import Seq2SeqCase

S2T_SIZES = {
    "model_type": "speech_to_text",
    "vocab_size": 128,
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 96,
    "decoder_ffn_dim": 96,
    "conv_channels": 48,
    "conv_kernel_sizes": [5, 3],
    "input_feat_per_channel": 20,
    "max_source_positions": 64,
    "max_target_positions": 64,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
}
SPEECH = {"model_class": "AutoModelForSpeechSeq2Seq", "inputs": "filter-bank"}

CASES = {
    "speech_to_text": Seq2SeqCase(S2T_SIZES, **SPEECH),
    "speech_to_text:untied-unscaled-gelu": Seq2SeqCase(
        {
            **S2T_SIZES,
            "tie_word_embeddings": False,
            "scale_embedding": False,
            "activation_function": "gelu",
            "num_conv_layers": 3,
            "conv_kernel_sizes": [3, 3, 5],
        },
        **SPEECH,
    ),
}

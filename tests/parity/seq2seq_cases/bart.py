from tests.parity.seq2seq_cases import Seq2SeqCase

# BART's keys at the sizes most encoder-decoder cases share
BART_SIZES = {
    "vocab_size": 128,
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 96,
    "decoder_ffn_dim": 96,
    "max_position_embeddings": 64,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
}

CASES = {
    "bart": Seq2SeqCase({"model_type": "bart", **BART_SIZES}),
    "bart:untied-scaled": Seq2SeqCase(
        {
            "model_type": "bart",
            **BART_SIZES,
            "tie_word_embeddings": False,
            "scale_embedding": True,
            "activation_function": "relu",
        }
    ),
    "mbart": Seq2SeqCase({"model_type": "mbart", **BART_SIZES}),
}

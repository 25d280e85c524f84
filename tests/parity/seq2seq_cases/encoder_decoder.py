from tests.parity.seq2seq_cases import Seq2SeqCase

# BERT's keys at the sizes the other encoder-decoder cases use
BERT_SIZES = {
    "model_type": "bert",
    "vocab_size": 128,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 96,
    "max_position_embeddings": 64,
    "pad_token_id": 0,
}
DECODER = {**BERT_SIZES, "is_decoder": True, "add_cross_attention": True}

CASES = {
    # bert2bert: the decoder has its own vocabulary size and depth
    "encoder-decoder": Seq2SeqCase(
        {
            "model_type": "encoder-decoder",
            "encoder": BERT_SIZES,
            "decoder": {**DECODER, "vocab_size": 96, "num_hidden_layers": 3},
            "decoder_start_token_id": 2,
            "pad_token_id": 0,
        }
    ),
}

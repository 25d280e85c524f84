from tests.parity.encoder_cases import EncoderCase

# the sizes most text-encoder cases share
TEXT = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "initializer_range": 0.1,
    "pad_token_id": 1,
}
TEXT_HEADS = (
    "ForMaskedLM",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "Model",
)

CASES = {
    "bert": EncoderCase({"model_type": "bert", **TEXT}, tuple(f"Bert{h}" for h in TEXT_HEADS)),
}

from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT

CASES = {
    "rembert": EncoderCase(
        {
            "model_type": "rembert",
            **TEXT,
            "input_embedding_size": 32,
            "output_embedding_size": 48,
            "pad_token_id": 0,
        },
        tuple(f"RemBert{h}" for h in ("ForMaskedLM", "ForSequenceClassification", "Model")),
    ),
}

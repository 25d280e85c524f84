from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# windows of 6 and 4 tokens (3 and 2 either side) on 9 tokens: transformers pads to 12 and the
# windows, not the sequence, bound what a local token sees
CASES = {
    "longformer": EncoderCase(
        {
            "model_type": "longformer",
            **TEXT,
            "type_vocab_size": 1,
            "attention_window": [6, 4],
        },
        tuple(f"Longformer{h}" for h in TEXT_HEADS),
        inputs="text+global",
    ),
}

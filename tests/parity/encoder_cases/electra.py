from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

CASES = {
    # embeddings narrower than the layers: embeddings_project and the generator head's width
    "electra": EncoderCase(
        {"model_type": "electra", **TEXT, "embedding_size": 32},
        tuple(f"Electra{h}" for h in TEXT_HEADS),
    ),
    "electra:same-width": EncoderCase(
        {"model_type": "electra", **TEXT, "embedding_size": 64}, ("ElectraForMaskedLM",)
    ),
}

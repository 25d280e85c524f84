from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# an entity table narrower than the hidden size, so entity_embedding_dense is there
LUKE = {"model_type": "luke", **TEXT, "entity_vocab_size": 16, "entity_emb_size": 32}

CASES = {
    "luke": EncoderCase(LUKE, tuple(f"Luke{h}" for h in TEXT_HEADS), inputs="text+entities"),
    "luke:plain-attention": EncoderCase(
        {**LUKE, "use_entity_aware_attention": False},
        ("LukeModel", "LukeForMaskedLM"),
        inputs="text+entities",
    ),
    "luke:untied": EncoderCase(
        {**LUKE, "tie_word_embeddings": False}, ("LukeForMaskedLM",), inputs="text+entities"
    ),
}

from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.roberta import ROBERTA

# two languages: the graph must run the second one's adapters, the one default_language names
LANGUAGES = {"languages": ["en_XX", "de_DE"], "default_language": "de_DE"}

CASES = {
    "xmod": EncoderCase(
        {"model_type": "xmod", **ROBERTA, **LANGUAGES},
        tuple(f"Xmod{h}" for h in ("ForMaskedLM", "ForSequenceClassification", "Model")),
    ),
    "xmod:own-adapter-norm": EncoderCase(
        {
            "model_type": "xmod",
            **ROBERTA,
            **LANGUAGES,
            "adapter_layer_norm": True,
            "ln_before_adapter": False,
        },
        ("XmodForMaskedLM",),
    ),
}

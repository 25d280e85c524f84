from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT

# two layers: each residual branch is scaled up by 1 / sqrt(2 / 36)
TINY = {**TEXT, "model_type": "esmc", "hidden_act": "silu"}
HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "Model")

CASES = {
    "esmc": EncoderCase(TINY, tuple(f"Esmc{h}" for h in HEADS)),
    # biases on the projections and the MLP, a bias-free token classifier, another rope base
    "esmc:biases": EncoderCase(
        {
            **TINY,
            "attention_bias": True,
            "mlp_bias": True,
            "token_classification_bias": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        },
        ("EsmcForTokenClassification", "EsmcModel"),
    ),
}

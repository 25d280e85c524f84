from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT
from tests.parity.encoder_cases.roberta import MLM_AND_CLASSIFIER, ROBERTA

CASES = {
    "roberta-prelayernorm": EncoderCase(
        {"model_type": "roberta-prelayernorm", **ROBERTA},
        tuple(f"RobertaPreLayerNorm{h}" for h in (*MLM_AND_CLASSIFIER, "Model")),
    ),
    "xlm-roberta-xl": EncoderCase(
        {"model_type": "xlm-roberta-xl", **ROBERTA},
        tuple(f"XLMRobertaXL{h}" for h in (*MLM_AND_CLASSIFIER, "ForTokenClassification")),
    ),
    "megatron-bert": EncoderCase(
        {"model_type": "megatron-bert", **TEXT},
        tuple(f"MegatronBert{h}" for h in (*MLM_AND_CLASSIFIER, "Model")),
    ),
}

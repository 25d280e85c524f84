from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT, TEXT_HEADS

# RoBERTa checkpoints carry one token-type row; pad_token_id 1 puts the first position at row 2
ROBERTA = {**TEXT, "type_vocab_size": 1}
MLM_AND_CLASSIFIER = ("ForMaskedLM", "ForSequenceClassification")

CASES = {
    "roberta": EncoderCase(
        {"model_type": "roberta", **ROBERTA}, tuple(f"Roberta{h}" for h in TEXT_HEADS)
    ),
    "roberta:untied": EncoderCase(
        {"model_type": "roberta", **ROBERTA, "tie_word_embeddings": False},
        ("RobertaForMaskedLM",),
    ),
    "xlm-roberta": EncoderCase(
        {"model_type": "xlm-roberta", **ROBERTA},
        tuple(f"XLMRoberta{h}" for h in MLM_AND_CLASSIFIER),
    ),
    "camembert": EncoderCase(
        {"model_type": "camembert", **ROBERTA},
        tuple(f"Camembert{h}" for h in MLM_AND_CLASSIFIER),
    ),
    "data2vec-text": EncoderCase(
        {"model_type": "data2vec-text", **ROBERTA},
        tuple(f"Data2VecText{h}" for h in (*MLM_AND_CLASSIFIER, "Model")),
    ),
}

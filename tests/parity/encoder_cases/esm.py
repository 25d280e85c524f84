from tests.parity.encoder_cases import EncoderCase
from tests.parity.encoder_cases.bert import TEXT

# ESM-2: rotary positions, token dropout (each input row holds one mask token), no norm before
# the layers; ESM-1: a learned, padding-aware position table and embeddings.layer_norm
ESM = {**TEXT, "mask_token_id": 2, "pad_token_id": 1}
ESM2 = {"position_embedding_type": "rotary", "token_dropout": True}
ESM1 = {"position_embedding_type": "absolute", "emb_layer_norm_before": True}
HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "Model")

CASES = {
    "esm": EncoderCase({"model_type": "esm", **ESM, **ESM2}, tuple(f"Esm{h}" for h in HEADS)),
    "esm:absolute": EncoderCase({"model_type": "esm", **ESM, **ESM1}, ("EsmForMaskedLM",)),
}

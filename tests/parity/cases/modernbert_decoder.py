"""Parity cases of converter/models/modernbert_decoder.py: tiny random configs, one per twist."""

from tests.parity.common import MULTI_HEAD

CASES = {
    # global, local, local: a window of 8 // 2 = 4 outgrown by the prompt and decode steps, a
    # rope base per layer type, the tied decoder with its own bias
    "modernbert-decoder": {
        **MULTI_HEAD,
        "num_hidden_layers": 3,
        "local_attention": 8,
        "bos_token_id": 1,
        "cls_token_id": 1,
        "sep_token_id": 2,
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 160_000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1_000.0},
        },
    },
    # biased norms, attention, MLP and head dense; an untied decoder without bias
    "modernbert-decoder:biases": {
        **MULTI_HEAD,
        "num_hidden_layers": 2,
        "local_attention": 8,
        "bos_token_id": 1,
        "cls_token_id": 1,
        "sep_token_id": 2,
        "norm_bias": True,
        "attention_bias": True,
        "mlp_bias": True,
        "classifier_bias": True,
        "decoder_bias": False,
        "tie_word_embeddings": False,
    },
}

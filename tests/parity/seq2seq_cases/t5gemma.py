from tests.parity.seq2seq_cases import Seq2SeqCase

# one side's keys (a t5_gemma_module section) at the sizes the other cases use: grouped
# heads, softcaps low enough to bend the tiny model's scores and logits, and a window of 3 so
# the sliding layers (the first of each pair) cut into the 9 source and 6 target tokens.
# The caps bend without saturating: uncapped, the logits reach about 2 (1.56 under the cap of
# 2) and the scores' cap moves the encoder output by 0.1. A cap that saturates (0.5: every
# large logit near it) makes tests/test_seq2seq_ep_matrix.py's relative bound (the quantized
# error over the largest logit) read the error against the cap instead: int8 0.09 where the
# same weights uncapped give 0.02 (the error itself is onnxruntime's int8 activations).
SIDE = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "query_pre_attn_scalar": 16,
    "sliding_window": 3,
    "attn_logit_softcapping": 0.5,
    "final_logit_softcapping": 2.0,
}

CASES = {
    "t5gemma": Seq2SeqCase(
        {
            "model_type": "t5gemma",
            "encoder": SIDE,
            "decoder": {**SIDE, "num_hidden_layers": 3, "num_key_value_heads": 1},
            "vocab_size": 128,
        }
    ),
    # no softcaps, full attention only, an own head
    "t5gemma:uncapped-untied": Seq2SeqCase(
        {
            "model_type": "t5gemma",
            "encoder": {
                **SIDE,
                "attn_logit_softcapping": None,
                "layer_types": ["full_attention", "full_attention"],
            },
            "decoder": {
                **SIDE,
                "attn_logit_softcapping": None,
                "final_logit_softcapping": None,
                "layer_types": ["full_attention", "full_attention"],
            },
            "vocab_size": 128,
            "tie_word_embeddings": False,
        }
    ),
}

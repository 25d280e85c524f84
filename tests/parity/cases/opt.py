"""Parity cases of converter/models/opt.py: tiny random configs, one per twist."""

_OPT = {
    "vocab_size": 128,
    "hidden_size": 64,
    "ffn_dim": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "init_std": 0.1,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

CASES = {
    "opt": _OPT,
    # OPT-350m: norms after each residual sum, no final norm, word embeddings of 32 projected
    # in and out, untied head
    "opt:post_norm": {
        **_OPT,
        "do_layer_norm_before": False,
        "word_embed_proj_dim": 32,
        "activation_function": "gelu",
        "tie_word_embeddings": False,
    },
}

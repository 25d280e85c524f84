"""Parity cases of converter/models/xglm.py: tiny random configs, one per twist."""

_XGLM = {
    "vocab_size": 128,
    "d_model": 64,
    "ffn_dim": 96,
    "num_layers": 2,
    "attention_heads": 4,
    "max_position_embeddings": 64,
    "init_std": 0.1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "pad_token_id": 1,
}

CASES = {
    "xglm": _XGLM,
    # the sinusoidal row of position 3 (+ offset 2) is the padding index's: zeros
    "xglm:pad5": {**_XGLM, "pad_token_id": 5, "scale_embedding": False},
}

"""Parity cases of converter/models/aria_text.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

ARIA = {**COMMON, "intermediate_size": 32, "moe_num_experts": 8, "moe_topk": 2}

CASES = {
    # 2 of 8 experts by logit, softmax over the picks; two shared experts as one MLP
    "aria_text": ARIA,
    # shared experts gated by GELU while the routed ones stay SiLU; biased attention and MLP
    "aria_text:gelu": {
        **ARIA,
        "hidden_act": "gelu",
        "moe_num_shared_experts": 1,
        "attention_bias": True,
        "mlp_bias": True,
        "moe_topk": 3,
    },
}

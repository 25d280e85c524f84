"""Parity cases of converter/models/hunyuan_moe.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # top-k listed per layer, as Hunyuan-A13B's config.json does
    "hunyuan_v1_moe": {
        **COMMON,
        "head_dim": 16,
        "intermediate_size": 32,
        "num_experts": 8,
        "moe_topk": [2, 2],
    },
}

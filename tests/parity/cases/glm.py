"""Parity cases of converter/models/glm.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # heads of 32: half of each (16 dims) rotated in interleaved pairs, inside the cpu
    # GroupQueryAttention
    "glm": {**COMMON, "head_dim": 32},
    "glm4": {**COMMON, "head_dim": 32},
    # heads of 16: 8 rotated dims, by the opset-23 RotaryEmbedding before GroupQueryAttention
    "glm:rotary8": {**COMMON, "head_dim": 16},
}

"""Parity cases of converter/models/apertus.py: tiny random configs, one per twist."""

from tests.parity.common import COMMON

CASES = {
    # xIELU and the default llama3 rope
    "apertus": {**COMMON},
    "apertus1p5_text": {**COMMON},
    # the LM head pruned to the first 96 ids
    "apertus1p5_text:pruned": {**COMMON, "output_vocab_size": 96},
}

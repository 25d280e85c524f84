"""Parity cases of converter/models/gpt2.py: tiny random configs, one per twist."""

from tests.parity.common import GPT2_KEYS

CASES = {"gpt2": GPT2_KEYS, "gpt-sw3": GPT2_KEYS}

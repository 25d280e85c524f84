"""Parity cases of converter/models/openai_gpt.py: tiny random configs, one per twist."""

from tests.parity.common import GPT2_KEYS

CASES = {"openai-gpt": GPT2_KEYS}

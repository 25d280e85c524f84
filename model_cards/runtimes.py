"""Which libraries run an encoder-decoder export, by model_type: the usage a card offers.

Both tables are checked against the libraries themselves: tests/test_card_runtimes.py reads
Transformers.js' maps from its installed dist, and runs Optimum on an export of every
registered encoder-decoder type (in its own venv, tests/legacy_clients)."""

from __future__ import annotations

TRANSFORMERS_JS_VERSION = "4.3.1"  # tests/js/package.json's pin
# The types @huggingface/transformers maps to a seq2seq model (its
# MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES and MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES): its
# translation, summarization, text2text-generation and automatic-speech-recognition pipelines
# load no other encoder-decoder.
TRANSFORMERS_JS_SEQ2SEQ = frozenset(
    {
        "bart",
        "blenderbot",
        "blenderbot-small",
        "cohere_asr",
        "lite-whisper",
        "longt5",
        "m2m_100",
        "marian",
        "mbart",
        "moonshine",
        "mt5",
        "speecht5",
        "t5",
        "whisper",
    }
)

OPTIMUM_VERSION = "0.1.0"  # optimum-onnx, tests/legacy_clients/requirements.txt's pin
# ORTModelForSeq2SeqLM / ORTModelForSpeechSeq2Seq load an export of any type whose config
# names the decoder's `num_attention_heads` and `hidden_size`; the types they do not load:
OPTIMUM_REFUSES = {
    "fsmt": "its config's `decoder` holds only the target vocabulary, and Optimum reads the "
    "decoder's `num_attention_heads` from it",
}
# Types Optimum runs only for some checkpoints: it sizes the first step's empty cache as
# num_attention_heads of hidden_size / num_attention_heads, which T5's layout need not keep
# (its own d_kv), nor T5Gemma's (grouped key/value heads, its own head_dim).
_T5_HEADS = (
    "Optimum runs it only where d_model = num_heads × d_kv (t5-small, t5-base; not "
    "t5-v1_1-small, flan-t5-small or mt5-small, whose first step it feeds a cache of the wrong "
    "head size)"
)
_GROUPED_HEADS = (
    "Optimum runs it only where the decoder's num_key_value_heads is its num_attention_heads "
    "and head_dim × num_attention_heads its hidden_size (not Gemma 2's grouped 2B and 9B sizes, "
    "whose first step it feeds a cache of the wrong shape)"
)
OPTIMUM_CAVEATS = {
    **{t: _T5_HEADS for t in ("longt5", "mt5", "switch_transformers", "t5", "umt5")},
    "t5gemma": _GROUPED_HEADS,
}
# Types whose translation names a target language (the tokenizer's codes): M2M-100's "fr", NLLB's
# "fra_Latn"; the first token generated is that language's token.
TARGET_LANGUAGE = frozenset({"m2m_100"})


def transformers_js_runs(model_type: str) -> bool:
    return model_type in TRANSFORMERS_JS_SEQ2SEQ


def optimum_runs(model_type: str) -> bool:
    return model_type not in OPTIMUM_REFUSES

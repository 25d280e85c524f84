"""model_cards/runtimes.py against the libraries: the Transformers.js table is its installed
dist's seq2seq maps, and Optimum runs (loads and generates with) an export of every registered
encoder-decoder type but those the table says it refuses."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from converter import build
from converter.registry import families, scope_of
from model_cards import runtimes
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import make_seq2seq, source_vocab
from tests.transformers_js import MODULES

DIST = MODULES / "@huggingface" / "transformers"
MAPS = ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES")
SEQ2SEQ_TYPES = sorted(t for t, f in families().items() if scope_of(f) == "seq2seq")


def _mapped_types(source: str, name: str) -> set[str]:
    body = re.search(rf"var {name} = /\* @__PURE__ \*/ new Map\(\[(.*?)\]\);", source, re.S)
    assert body is not None, f"{name} is not in the dist"
    return set(re.findall(r'\[\s*"([^"]+)",\s*"[^"]+"\s*\]', body.group(1)))


def test_the_transformers_js_table_is_the_installed_dist_s(transformers_js):
    package = json.loads((DIST / "package.json").read_text())
    assert package["version"] == runtimes.TRANSFORMERS_JS_VERSION
    source = (DIST / "dist" / "transformers.node.mjs").read_text()
    mapped = set().union(*(_mapped_types(source, name) for name in MAPS))
    assert mapped == runtimes.TRANSFORMERS_JS_SEQ2SEQ


def _inputs(config: dict, speech: bool) -> dict:
    rng = np.random.default_rng(0)
    if not speech:
        ids = rng.integers(3, source_vocab(config), size=(1, 7))
        return {"input_ids": ids.tolist(), "attention_mask": np.ones_like(ids).tolist()}
    if config["model_type"] == "whisper":
        shape = (1, config["num_mel_bins"], 2 * config["max_source_positions"])
        return {"input_features": rng.standard_normal(shape).tolist()}
    if config["model_type"] == "moonshine":
        return {"input_values": rng.standard_normal((1, 4000)).tolist()}
    width = config["input_feat_per_channel"] * config.get("input_channels", 1)  # speech_to_text
    features = rng.standard_normal((1, 40, width))
    return {"input_features": features.tolist(), "attention_mask": np.ones((1, 40)).tolist()}


def _head_sizes_agree(config: dict) -> bool:
    """Whether the cache holds num_attention_heads of hidden_size / num_attention_heads (T5's
    layout sets d_kv; T5Gemma's decoder groups its key/value heads and sets head_dim)."""
    if config["model_type"] == "t5gemma":
        d = config["decoder"]
        kv_heads = d["num_key_value_heads"]
        return kv_heads == d["num_attention_heads"] and kv_heads * d["head_dim"] == d["hidden_size"]
    return "d_kv" not in config or config["d_model"] == config["num_heads"] * config["d_kv"]


@pytest.mark.parametrize("model_type", SEQ2SEQ_TYPES)
def test_optimum_runs_the_types_the_table_says(legacy_clients, tmp_path, model_type):
    case = CASES[model_type]
    folder = tmp_path / model_type
    make_seq2seq(model_type, case, folder)
    out = build(str(folder), progress=False).save(tmp_path / "export", progress=False)
    shutil.copytree(out / "onnx", folder / "onnx")
    speech = case.model_class == "AutoModelForSpeechSeq2Seq"
    request = {"folder": str(folder), "inputs": _inputs(case.config, speech), "speech": speech}
    if not runtimes.optimum_runs(model_type):
        with pytest.raises(RuntimeError, match="num_attention_heads"):
            legacy_clients("optimum-generates", **request)
        return
    if model_type in runtimes.OPTIMUM_CAVEATS and not _head_sizes_agree(case.config):
        with pytest.raises(RuntimeError, match="Got invalid dimensions"):
            legacy_clients("optimum-generates", **request)
        return
    result = legacy_clients("optimum-generates", **request)
    assert result["merged"] and len(result["tokens"][0]) > 1

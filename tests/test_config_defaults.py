"""A key config.json leaves out takes the default of the family's transformers configuration
class, as transformers itself fills it.

For every family and every key of its config.json that the converter reads: strip the key, then
either transformers can load the checkpoint with the defaults it fills (then the converted graph
must match it), or it cannot (the default changes a weight's shape: then the conversion must be
refused with a MobiusError too). A token id whose default falls outside the tiny vocabulary is
refused by name.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from huggingface_hub.errors import StrictDataclassClassValidationError

from converter import build
from converter.config import ArchitectureConfig, ConfigReader, config_defaults
from converter.errors import ConfigError, MobiusError
from converter.registry import family_for
from converter.validate.runtime import OnnxDecoder
from tests.checkpoints import edit_config
from tests.parity.cases import CASES, is_base
from tests.parity.reference import make_checkpoint

ROOT = Path(__file__).parents[1]
FAMILIES = sorted(c for c in CASES if is_base(c))
PROMPT = np.random.default_rng(4).integers(3, 128, size=(1, 6))
TOKEN_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_config_defaults", ROOT / "scripts" / "gen_config_defaults.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_defaults_file_is_current():
    generator = _generator()
    assert generator.OUT.read_text() == generator.render(), (
        "converter/data/config_defaults.json is stale: run python scripts/gen_config_defaults.py"
    )


class _Recording(dict):
    """A config dict that remembers every key the reader asks for."""

    def __init__(self, data, asked: set):
        super().__init__(data)
        self.asked = asked

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.asked.add(key)
        return super().__contains__(key)


def _saved_config(family: str) -> dict:
    return transformers.AutoConfig.for_model(family, **CASES[family]).to_dict()


def _read_keys(config: dict) -> set[str]:
    """The config.json keys the converter reads from `config`."""
    asked: set[str] = set()
    original = ConfigReader.__init__

    def recording_init(reader, raw, model_type):
        original(reader, raw, model_type)
        reader.raw = _Recording(reader.raw, asked)

    ConfigReader.__init__ = recording_init
    try:
        ArchitectureConfig.from_hf(config)
    finally:
        ConfigReader.__init__ = original
    return asked


def _strippable(family: str) -> list[str]:
    saved = _saved_config(family)
    return sorted((_read_keys(saved) & set(saved)) - {"model_type"})


STRIPPED = [(family, key) for family in FAMILIES for key in _strippable(family)]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    made: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in made:
            made[family] = tmp_path_factory.mktemp(family) / "hf"
            make_checkpoint(family, made[family])
        return made[family]

    return get


def _transformers_model(folder: Path, attention: str):
    """transformers' model of `folder` if it loads every weight under the config it reads there
    (its own renaming of Hub layouts included: none missing, left over or misshapen) and runs
    the prompt; else None."""
    try:
        model, info = transformers.AutoModelForCausalLM.from_pretrained(
            folder, output_loading_info=True, attn_implementation=attention
        )
        if info["missing_keys"] or info["unexpected_keys"] or info["mismatched_keys"]:
            return None
        with torch.no_grad():
            model(input_ids=torch.tensor(PROMPT))
    except (ValueError, RuntimeError, IndexError, StrictDataclassClassValidationError):
        return None  # transformers refuses the config, or fails running it
    except (TypeError, KeyError):  # or on a None it left unfilled (Ministral's head_dim)
        return None
    except AttributeError:  # or on a setting it looks for and did not fill (DBRX's rope_theta)
        return None
    return model


@pytest.mark.parametrize(("family", "key"), STRIPPED)
def test_a_stripped_key_takes_the_transformers_default(checkpoints, family, key, tmp_path):
    folder = tmp_path / "hf"
    shutil.copytree(checkpoints(family), folder)
    edit_config(folder, **{key: ...})
    default = config_defaults()[family].get(key)
    vocab = CASES[family]["vocab_size"]
    if key in TOKEN_KEYS and default is not None and default >= vocab:
        with pytest.raises(ConfigError, match=f"'{key}' = {default} .*vocab_size {vocab}"):
            build(str(folder), progress=False)
        return
    reference = _transformers_model(folder, family_for(family).reference_attention)
    if reference is None:
        with pytest.raises(MobiusError):
            build(str(folder), progress=False)
        return
    build(str(folder), progress=False).save(tmp_path / "onnx", progress=False)
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor(PROMPT)).logits.numpy()
    actual = OnnxDecoder(tmp_path / "onnx").run(PROMPT, np.ones_like(PROMPT), [])[0]
    assert np.abs(expected - actual).max() <= 1e-4


def test_every_family_is_covered():
    assert set(FAMILIES) <= set(config_defaults())
    assert {family for family, _ in STRIPPED} == set(FAMILIES)


def test_model_type_has_no_default():
    config = json.loads(json.dumps(_saved_config("llama")))
    del config["model_type"]
    with pytest.raises(ConfigError, match="'model_type' is missing"):
        ArchitectureConfig.from_hf(config)

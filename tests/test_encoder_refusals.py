"""Encoder settings and heads the converter does not build are refused by name, before any
weight is read; ELECTRA's discriminator is refused as a fill-mask model and converts as a
feature extractor."""

from __future__ import annotations

import pytest
import transformers

from converter import build
from converter.config import ConfigReader
from converter.errors import ConfigError
from converter.registry import family_for
from tests.parity.encoder_cases import CASES
from tests.parity.encoder_reference import make_encoder

REFUSED = [
    ("roberta", {"is_decoder": True}, "'is_decoder' = True is not supported"),
    ("xmod", {"pre_norm": True}, "'pre_norm' = True is not supported"),
    ("xmod", {"default_language": None}, "'default_language' = None must name one of"),
    ("xmod", {"default_language": "fr_XX"}, "'default_language' = 'fr_XX' must name one of"),
    ("esm", {"is_folding_model": True}, "'is_folding_model' = True is not supported"),
    ("ibert", {"quant_mode": True}, "'quant_mode' = True is not supported"),
    ("esm", {"mask_token_id": None}, "'mask_token_id' is missing"),
    ("esm", {"position_embedding_type": "relative_key"}, "'position_embedding_type' = "),
]


@pytest.mark.parametrize(("case", "changes", "message"), REFUSED, ids=lambda v: str(v)[:40])
def test_an_unbuilt_setting_is_refused_by_name(case, changes, message):
    config = CASES[case].config
    raw = transformers.AutoConfig.for_model(**config).to_dict() | changes
    family = family_for(config["model_type"])
    with pytest.raises(ConfigError, match=message):
        family.rules.read(ConfigReader(family.rules.select(raw), config["model_type"]))


def test_the_electra_discriminator_is_no_fill_mask_model(tmp_path):
    case = CASES["electra"]
    make_encoder("electra", case, "ElectraForPreTraining", tmp_path / "hf")
    with pytest.raises(ConfigError, match=r"no generator head .* --task feature-extraction"):
        build(str(tmp_path / "hf"), progress=False)
    package = build(str(tmp_path / "hf"), task="feature-extraction", progress=False)
    outputs = [o.name for o in package.components[0].model.graph.outputs]
    assert outputs == ["last_hidden_state"]

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
    ("bit", {"layer_type": "resnet"}, "'layer_type' = 'resnet' is not supported"),
    ("cvt", {"qkv_projection_method": ["avg", "avg"]}, "'qkv_projection_method' = "),
    ("cvt", {"cls_token": [True, True]}, "'cls_token' = \\[True, True\\] is not supported"),
    ("align", {"projection_dim": 64}, "'projection_dim' = 64 differs .* 80 channels"),
    ("efficientnet", {"hidden_dim": 999}, "'hidden_dim' = 999 differs"),
    ("efficientnet", {"pooling_type": "sum"}, "'pooling_type' = 'sum' is not supported"),
    ("levit", {"image_size": None}, "'image_size' is missing"),
    ("mobilevit", {"output_stride": 4}, "'output_stride' = 4 is not supported"),
    ("pp_lcnet", {"block_configs": [[[3, 16, 32, 1, False]]]}, "five stages"),
    ("textnet", {"stem_out_channels": 12}, "'stem_out_channels' must equal"),
    ("nystromformer", {"inv_coeff_init_option": True}, "'inv_coeff_init_option' = True is not"),
    ("nystromformer", {"conv_kernel_size": 4}, "'conv_kernel_size' = 4 is not supported"),
    ("nystromformer", {"num_landmarks": 4}, "'num_landmarks' = 4 is not supported"),
    ("neomme", {"per_layer_config": {"0": {"head_dim": 8}}}, "'per_layer_config' = "),
    (
        "neomme",
        {"rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0}}},
        "'rope_parameters' = .* full_attention layers run the default rope only",
    ),
    ("tapas", {"add_cross_attention": True}, "'add_cross_attention' = True is not supported"),
    ("tapas", {"type_vocab_sizes": [2, 4]}, "'type_vocab_sizes' = \\[2, 4\\] must list"),
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


def test_cvt_classifies_only_with_the_last_stage_cls_token():
    """transformers' CvtForImageClassification reads the cls token (and fails without it)."""
    config = CASES["cvt:no_cls_token"].config
    raw = transformers.AutoConfig.for_model(**config).to_dict()
    family = family_for("cvt")
    cfg = family.rules.read(ConfigReader(family.rules.select(raw), "cvt"))
    with pytest.raises(ConfigError, match="'cls_token' is false for the last stage"):
        family.make_model(cfg, None, None, "image-classification", frozenset())

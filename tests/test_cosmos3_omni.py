"""Cosmos3-Omni converts as the Qwen3-VL it is, from a unified checkpoint that also carries the
generator, sound and action towers transformers leaves unread, with diffusers' attention names
(the parity case covers the flat names transformers saves)."""

from __future__ import annotations

import numpy as np
from safetensors.numpy import load_file, save_file

from converter import build
from tests.parity.vlm_cases import CASES
from tests.parity.vlm_reference import make_vlm

OTHER_TOWERS = (
    "model.language_model.layers.0.self_attn.add_q_proj.weight",
    "model.language_model.layers.1.mlp.moe_gen.experts.0.up_proj.weight",
    "proj_out.weight",
    "time_embedder.linear_1.bias",
    "audio_modality_embed",
    "action_proj_in.weight",
)

DIFFUSERS_NAMES = {
    "q_proj": "to_q",
    "k_proj": "to_k",
    "v_proj": "to_v",
    "o_proj": "to_out",
    "q_norm": "norm_q",
    "k_norm": "norm_k",
}


def test_the_other_towers_are_left_unread(tmp_path):
    make_vlm("cosmos3_omni", CASES["cosmos3_omni"], tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    for name in OTHER_TOWERS:
        tensors[name] = np.zeros((2, 2), np.float32)
    for name in [n for n in tensors if ".self_attn." in n]:
        for ours, theirs in DIFFUSERS_NAMES.items():
            if f".{ours}." in name:
                tensors[name.replace(f".{ours}.", f".{theirs}.")] = tensors.pop(name)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    package = build(str(tmp_path), progress=False)
    assert package.family.genai_type == "qwen3_vl"

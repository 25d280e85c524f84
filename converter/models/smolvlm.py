"""SmolVLM: Idefics 3's layout (converter/models/idefics3.py) into a SmolLM (Llama) text model;
when every tile of the batch is blank, transformers still encodes the first."""

from __future__ import annotations

from converter.models.idefics3 import IDEFICS3_RENAMES, Idefics3Model, Idefics3Rules
from converter.registry import Family
from converter.tasks.vision_language import VLM_TASK


class SmolVlmRules(Idefics3Rules):
    vision_type = "smolvlm_vision"


class SmolVlmModel(Idefics3Model):
    keep_a_blank_tile = True


FAMILIES = [
    Family(
        "smolvlm",
        SmolVlmModel,
        "Idefics 3's layout (a SigLIP-like tower over the processor's tiles, a pixel-shuffle "
        "connector) into SmolLM; onnxruntime runs it, onnxruntime-genai has no SmolVLM type",
        ("HuggingFaceTB/SmolVLM-256M-Instruct", "HuggingFaceTB/SmolVLM2-2.2B-Instruct"),
        rules=SmolVlmRules(),
        task=VLM_TASK,
        category="vlm",
        renames=IDEFICS3_RENAMES,
    ),
]

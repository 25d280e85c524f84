"""Arcee (AFM): Llama with an ungated up/down MLP, ReLU² by default. Nemotron and Jais 2 are
this model with their own norms (rules)."""

from converter.components import UpDownMLP
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class ArceeLayer(DecoderLayer):
    mlp_cls = UpDownMLP


class ArceeBody(DecoderBody):
    layer_cls = ArceeLayer


class ArceeLM(DecoderLM):
    body_cls = ArceeBody


FAMILIES = [
    Family(
        "arcee",
        ArceeLM,
        "ungated up/down MLP (ReLU²)",
        ("arcee-ai/AFM-4.5B",),
    ),
]

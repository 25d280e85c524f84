"""onnxscript.nn building blocks whose attribute paths equal Hugging Face state-dict names."""

from converter.components.activations import activation
from converter.components.attention import Attention
from converter.components.embedding import Embedding
from converter.components.linear import Conv1D, Linear
from converter.components.mlp import FcProjMLP, GatedMLP, MegatronMLP, PlainMLP, UpDownMLP
from converter.components.norms import LayerNorm, RMSNorm, make_norm

__all__ = [
    "Attention",
    "Conv1D",
    "Embedding",
    "FcProjMLP",
    "GatedMLP",
    "LayerNorm",
    "Linear",
    "MegatronMLP",
    "PlainMLP",
    "RMSNorm",
    "UpDownMLP",
    "activation",
    "make_norm",
]

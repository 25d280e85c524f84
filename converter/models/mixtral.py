"""Mixtral: Mistral whose MLPs are experts (`block_sparse_moe`, experts named w1/w3/w2), each
token running its top-2 by softmax, renormalized."""

from converter.components.experts import PerExpert
from converter.components.moe import SparseMoe
from converter.config.moe import MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class MixtralMoe(SparseMoe):
    layout = PerExpert(gate="w1", up="w3", down="w2")


class MixtralLayer(DecoderLayer):
    mlp_name = "block_sparse_moe"
    moe_cls = MixtralMoe


class MixtralBody(DecoderBody):
    layer_cls = MixtralLayer


class MixtralLM(DecoderLM):
    body_cls = MixtralBody


FAMILIES = [
    Family(
        "mixtral",
        MixtralLM,
        "experts in every layer: softmax top-k, renormalized",
        ("mistralai/Mixtral-8x7B-Instruct-v0.1",),
        rules=MoeRules(normalize=True, expert_size_keys=("intermediate_size",)),
        category="moe",
    ),
]

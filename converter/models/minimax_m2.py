"""MiniMax-M2: Mixtral's experts (`block_sparse_moe`, w1/w3/w2) routed by sigmoid scores whose
picks a selection-only bias shifts (`block_sparse_moe.e_score_correction_bias`), renormalized;
q/k RMSNorm over the whole projection; partial rotary (`rotary_dim`)."""

import dataclasses

from converter.components.experts import PerExpert
from converter.components.moe import SparseMoe
from converter.config import ConfigReader, Rope
from converter.config.moe import SIGMOID, MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family

# settings of the released config.json that transformers' MiniMax-M2 always has this way
_FIXED = {"scoring_func": "sigmoid", "use_routing_bias": True, "use_qk_norm": True}


class MiniMaxM2Rules(MoeRules):
    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        for key, value in _FIXED.items():
            if r.raw.get(key, value) != value:
                r.refuse(key, f"transformers' MiniMax-M2 runs {key} = {value!r}")
        moe = super().moe(r, cfg)
        return dataclasses.replace(moe, scoring=SIGMOID, normalize=True)

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        # released checkpoints give the rotated width as `rotary_dim`
        if r.has("rotary_dim") and not r.has("partial_rotary_factor"):
            r.raw["partial_rotary_factor"] = r.int("rotary_dim", hi=head_dim) / head_dim
        return super().rope(r, head_dim)


class MiniMaxM2Moe(SparseMoe):
    layout = PerExpert(gate="w1", up="w3", down="w2")
    correction_beside_router = True


class MiniMaxM2Layer(DecoderLayer):
    mlp_name = "block_sparse_moe"
    moe_cls = MiniMaxM2Moe


class MiniMaxM2Body(DecoderBody):
    layer_cls = MiniMaxM2Layer


class MiniMaxM2LM(DecoderLM):
    body_cls = MiniMaxM2Body


FAMILIES = [
    Family(
        "minimax_m2",
        MiniMaxM2LM,
        "experts in every layer: sigmoid top-k shifted by a selection-only bias, renormalized; "
        "q/k RMSNorm over the whole projection, partial rotary",
        ("MiniMaxAI/MiniMax-M2",),
        rules=MiniMaxM2Rules(qk_norm="full", expert_size_keys=("intermediate_size",)),
        category="moe",
    ),
]

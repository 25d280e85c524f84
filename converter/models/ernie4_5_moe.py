"""ERNIE 4.5 MoE: ERNIE 4.5 (interleaved rotary, `use_bias` on every projection and the head)
with experts in the layers from `moe_layer_start_index` to `moe_layer_end_index`, every
`moe_layer_interval`-th; softmax routing whose picks are shifted by a selection-only bias
(`moe_statics`), renormalized by a sum floored at `moe_norm_min`; shared experts."""

from dataclasses import dataclass, fields

from onnxscript import nn

from converter.components.moe import SparseMoe, routing_weights
from converter.config import ConfigReader
from converter.config.moe import MoeConfig, MoeRules
from converter.config.reader import MAX_LAYERS
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.ernie4_5 import Ernie45Rules
from converter.registry import Family


@dataclass(frozen=True)
class Ernie45MoeConfig(MoeConfig):
    norm_min: float = 1e-12  # the floor of the picks' sum that renormalizes them


class Ernie45MoeRules(Ernie45Rules, MoeRules):
    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        shared = r.int("moe_num_shared_experts", default=0, lo=0)
        generic = {f.name: getattr(moe, f.name) for f in fields(MoeConfig)}
        return Ernie45MoeConfig(
            **generic
            | {
                "normalize": False,  # the family renormalizes itself, by a floored sum
                "shared_size": moe.expert_size * shared,
                "norm_min": r.float("moe_norm_min", default=1e-12),
            }
        )

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        start = r.int("moe_layer_start_index", default=0, lo=0, hi=layers)
        end = r.int("moe_layer_end_index", default=-1, lo=-1, hi=MAX_LAYERS)
        end = layers - 1 if end == -1 else end
        interval = r.int("moe_layer_interval", default=1, hi=layers)
        return tuple((i + 1) % interval == 0 and start <= i <= end for i in range(layers))


class MoeStatics(nn.Module):
    def __init__(self, experts: int, dtype):
        super().__init__()
        self.e_score_correction_bias = nn.Parameter([1, experts], dtype)

    def forward(self, op):
        return op.Reshape(self.e_score_correction_bias, [-1])


class Ernie45Moe(SparseMoe):
    shared_name = "shared_experts"

    def __init__(self, cfg, dtype, ep):
        super().__init__(cfg, dtype, ep)
        self.moe_statics = MoeStatics(cfg.moe.num_experts, dtype)

    def kernel_routes(self) -> bool:
        return False

    def route(self, op, router, logits):
        weights = routing_weights(op, router, logits, self.moe, self.moe_statics(op))
        total = op.Max(op.ReduceSum(weights, [-1], keepdims=1), self.moe.norm_min)
        return op.Div(weights, total)


class Ernie45MoeLayer(DecoderLayer):
    moe_cls = Ernie45Moe


class Ernie45MoeBody(DecoderBody):
    layer_cls = Ernie45MoeLayer


class Ernie45MoeLM(DecoderLM):
    body_cls = Ernie45MoeBody

    def make_head(self, cfg, dtype):
        self.head_bias = cfg.mlp_bias  # `use_bias` biases the head too
        return super().make_head(cfg, dtype)


FAMILIES = [
    Family(
        "ernie4_5_moe",
        Ernie45MoeLM,
        "ERNIE 4.5 with experts in a span of layers: softmax top-k shifted by a "
        "selection-only bias (moe_statics), floored renormalization; shared experts",
        ("baidu/ERNIE-4.5-21B-A3B-PT",),
        rules=Ernie45MoeRules(),
        category="moe",
    ),
]

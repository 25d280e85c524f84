"""Granite MoE: Granite (embedding, attention, residual and logit multipliers) whose MLPs are
experts, each token running its top-k by softmax, renormalized. Each layer's experts are one
stacked tensor per projection, gate and up rows concatenated; GraniteMoeShared and Granite MoE
SWA add a shared MLP every token runs, and Granite MoE SWA Granite SWA's attention."""

import dataclasses

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components.activations import activation
from converter.components.linear import Linear
from converter.components.moe import Router as _Router
from converter.components.moe import SparseMoe, routing_weights
from converter.config.moe import MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.granite_swa import GraniteSWARules
from converter.registry import Family
from converter.weights import Assembly


class Stacked:
    """One [E, 2I, H] tensor of gate rows then up rows and one [E, H, I] down tensor, named
    relative to the MoE block holding the experts."""

    def __init__(self, gate_up: str, down: str):
        self.gate_up, self.down = gate_up, down

    def weight(self, prefix: str, part: str, shape: tuple[int, int, int]) -> Assembly:
        block = prefix.rsplit(".", 1)[0]
        if part == "down":
            return Assembly(((f"{block}.{self.down}", shape),), lambda arrays: arrays[0])
        experts, inner, hidden = shape
        half = slice(0, inner) if part == "gate" else slice(inner, 2 * inner)
        stacked = ((f"{block}.{self.gate_up}", (experts, 2 * inner, hidden)),)
        return Assembly(stacked, lambda arrays: np.ascontiguousarray(arrays[0][:, half]))


class Router(nn.Module):
    """The router's projection under `layer` (GraniteMoe's `router.layer.weight`)."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        self.layer = _Router(cfg, dtype)

    def forward(self, op, flat):
        return self.layer(op, flat)


class GraniteMoe(SparseMoe):
    router_name = "router"
    layout = Stacked("input_linear.weight", "output_linear.weight")

    def __init__(self, cfg, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        self.router = Router(cfg, dtype)

    def route(self, op, router, logits):
        return routing_weights(op, router.layer, logits, self.moe)


class GraniteMoeSWAMoe(SparseMoe):
    router_name = "router"
    layout = Stacked("experts.gate_up_proj", "experts.down_proj")


class SharedMLP(nn.Module):
    """act(gate) * up from one `input_linear` (gate columns, then up), then `output_linear`."""

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        self.act, inner = cfg.activation, cfg.moe.shared_mlp
        self.input_linear = Linear(cfg.hidden_size, 2 * inner, False, dtype)
        self.output_linear = Linear(inner, cfg.hidden_size, False, dtype)

    def forward(self, op, x):
        gate, up = op.Split(self.input_linear(op, x), axis=-1, num_outputs=2, _outputs=2)
        return self.output_linear(op, op.Mul(activation(op, self.act, gate), up))


class GraniteMoeLayer(DecoderLayer):
    """Pre-norm; the shared MLP, where the config has one, beside the experts."""

    mlp_name = "block_sparse_moe"
    moe_cls = GraniteMoe

    def __init__(self, cfg, index: int, dtype: ir.DataType, ep):
        super().__init__(cfg, index, dtype, ep)
        self.shared_mlp = SharedMLP(cfg, dtype) if cfg.moe.shared_mlp else None

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.input_layernorm(op, x)
        a, key, value = self.self_attn(op, h, kernel, past_key, past_value)
        x = self._residual(op, x, a)
        h = self.post_attention_layernorm(op, x)
        m = self.block_sparse_moe(op, h)
        if self.shared_mlp is not None:
            m = op.Add(m, self.shared_mlp(op, h))
        return self._residual(op, x, m), key, value


class GraniteMoeBody(DecoderBody):
    layer_cls = GraniteMoeLayer


class GraniteMoeLM(DecoderLM):
    body_cls = GraniteMoeBody


class GraniteMoeSWALayer(GraniteMoeLayer):
    moe_cls = GraniteMoeSWAMoe


class GraniteMoeSWABody(DecoderBody):
    layer_cls = GraniteMoeSWALayer


class GraniteMoeSWALM(DecoderLM):
    body_cls = GraniteMoeSWABody


@dataclasses.dataclass(frozen=True)
class GraniteMoeConfig(MoeConfig):
    shared_mlp: int = 0  # inner width of the layer's shared MLP (beside the MoE block), 0: none


class GraniteMoeRules(MoeRules):
    """Softmax over the top-k logits (the top-k of a softmax, renormalized), whatever
    `norm_topk_prob` says; `shared_intermediate_size` (0: none) sizes the shared MLP."""

    def __init__(self, **traits):
        super().__init__(normalize=True, expert_size_keys=("intermediate_size",), **traits)

    def moe(self, r, cfg) -> MoeConfig:
        shared = r.int("shared_intermediate_size", default=0, lo=0)
        moe = dataclasses.asdict(super().moe(r, cfg)) | {"normalize": True}
        return GraniteMoeConfig(**moe, shared_mlp=shared)


class GraniteMoeSWARules(GraniteSWARules, GraniteMoeRules):
    pass


FAMILIES = [
    Family(
        "granitemoe",
        GraniteMoeLM,
        "Granite's multipliers; experts stacked with gate|up concatenated, softmax top-k",
        ("ibm-granite/granite-3.1-3b-a800m-instruct",),
        rules=GraniteMoeRules(),
        category="moe",
    ),
    Family(
        "granitemoeshared",
        GraniteMoeLM,
        "Granite MoE plus a shared MLP every token runs (`shared_intermediate_size`)",
        ("ibm-research/moe-7b-1b-active-shared-experts",),
        rules=GraniteMoeRules(),
        category="moe",
    ),
    Family(
        "granitemoe_swa",
        GraniteMoeSWALM,
        "Granite SWA's attention (windows, a rope base per layer, sinks) with Granite MoE's "
        "experts and shared MLP",
        (),
        rules=GraniteMoeSWARules(),
        category="moe",
    ),
]

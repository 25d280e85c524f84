"""Laguna: Llama with per-head q/k RMSNorm, a query head count per layer
(`num_attention_heads_per_layer`), rope settings per layer type (the full layers rotating part
of each head) and attention outputs gated by softplus(g_proj(x)), per head (`gating` true or
"per-head") or per element. In the `mlp_layer_types` sparse layers, experts picked by sigmoid
score of router logits softcapped at `moe_router_logit_softcapping`, plus a selection-only
bias, renormalized and scaled by `moe_routed_scaling_factor`; plus a shared expert."""

import copy
import dataclasses

from converter.components.attention import Attention
from converter.components.linear import Linear
from converter.components.moe import Router, SparseMoe
from converter.config import FULL, SLIDING, ConfigReader, Rope, extend, parse_local_rope
from converter.config.architecture import ArchitectureConfig
from converter.config.moe import MoeConfig, MoeRules, sigmoid_renormalized
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.moe_layers import mlp_layer_types, renamed
from converter.registry import Family


@dataclasses.dataclass(frozen=True)
class LagunaConfig(ArchitectureConfig):
    layer_heads: tuple[int, ...] = ()  # query heads of each layer
    gate_per_head: bool = True  # one softplus gate per head (else one per output element)
    router_softcap: float = 0.0  # router logits as cap * tanh(logit / cap) when > 0


# transformers' Laguna when config.json has no rope_parameters (it reads no top-level rope keys)
_ROPE = {
    FULL: {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5},
    SLIDING: {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0},
}


class LagunaRules(MoeRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL  # without layer_types every layer attends to all

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        if r.raw.get("rope_parameters") is None:
            r.raw["rope_parameters"] = copy.deepcopy(_ROPE)
        return super().rope(r, head_dim)

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return parse_local_rope(r.raw, head_dim=head_dim)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        if r.bool("moe_apply_router_weight_on_input", False):
            r.refuse(
                "moe_apply_router_weight_on_input",
                "transformers' Laguna weights the experts' outputs, not their inputs",
            )
        moe = super().moe(r, cfg)
        return sigmoid_renormalized(
            moe,
            scaling=r.float("moe_routed_scaling_factor", default=1.0),
            shared_size=r.int("shared_expert_intermediate_size", default=512, lo=0),
            sparse_layers=mlp_layer_types(r, cfg.num_hidden_layers, dense_first=1),
        )

    def read(self, r: ConfigReader) -> LagunaConfig:
        cfg = super().read(r)
        layers = cfg.num_hidden_layers
        heads = r.raw.get("num_attention_heads_per_layer") or [cfg.num_attention_heads] * layers
        if (
            not isinstance(heads, list)
            or len(heads) != layers
            or not all(
                isinstance(h, int) and h > 0 and h % cfg.num_key_value_heads == 0 for h in heads
            )
        ):
            raise ConfigError(
                f"'num_attention_heads_per_layer' must list {layers} head counts, each a multiple "
                f"of 'num_key_value_heads' = {cfg.num_key_value_heads}"
            )
        gating = r.get("gating", default=True)
        cap = r.get("moe_router_logit_softcapping", default=0.0)
        if not isinstance(cap, bool) and isinstance(cap, int | float) and cap <= 0:
            cap = 0.0  # transformers caps only above 0
        else:
            cap = r.float("moe_router_logit_softcapping")
        return extend(
            cfg,
            LagunaConfig,
            layer_heads=tuple(heads),
            gate_per_head=gating is True or gating == "per-head",
            router_softcap=cap,
        )


class LagunaAttention(Attention):
    """The heads' outputs times softplus(g_proj(x)) (per head or per element), then o_proj."""

    def __init__(self, cfg, dtype, spec, packed=False):
        super().__init__(cfg, dtype, spec, packed)
        self.per_head = cfg.gate_per_head
        width = spec.heads if self.per_head else spec.heads * spec.head_dim
        self.g_proj = Linear(cfg.hidden_size, width, False, dtype)

    def _output(self, op, y, x):
        gate = op.Softplus(self.g_proj(op, x))
        if self.per_head:
            heads = op.Reshape(y, [0, 0, self.spec.heads, self.spec.head_dim])
            y = op.Reshape(op.Mul(heads, op.Unsqueeze(gate, [-1])), [0, 0, -1])
        else:
            y = op.Mul(y, gate)
        return self.o_proj(op, y)


class SoftcappedRouter(Router):
    def __init__(self, cfg, dtype):
        super().__init__(cfg, dtype)
        self.softcap = cfg.router_softcap

    def forward(self, op, flat):
        logits = super().forward(op, flat)
        if self.softcap > 0.0:
            logits = op.Mul(op.Tanh(op.Div(logits, self.softcap)), self.softcap)
        return logits


class LagunaMoe(SparseMoe):
    """The selection bias is saved as `experts.e_score_correction_bias`."""

    router_cls = SoftcappedRouter

    def assemblies(self):
        bias = self.gate.e_score_correction_bias
        block = bias.name.rsplit(".", 2)[0]
        return {bias.name: renamed(bias, f"{block}.experts.e_score_correction_bias")}


class LagunaLayer(DecoderLayer):
    attention_cls = LagunaAttention
    moe_cls = LagunaMoe

    def __init__(self, cfg: LagunaConfig, index, dtype, ep):
        heads = cfg.layer_heads[index]
        super().__init__(dataclasses.replace(cfg, num_attention_heads=heads), index, dtype, ep)


class LagunaBody(DecoderBody):
    layer_cls = LagunaLayer


class LagunaLM(DecoderLM):
    body_cls = LagunaBody


FAMILIES = [
    Family(
        "laguna",
        LagunaLM,
        "query heads per layer, softplus-gated attention outputs, per-head q/k norms, rope per "
        "layer type; sigmoid experts over softcapped router logits with a selection-only "
        "bias, renormalized and scaled, plus a shared expert",
        ("poolside/laguna-XS.2",),
        rules=LagunaRules(qk_norm="head"),
        category="moe",
    ),
]

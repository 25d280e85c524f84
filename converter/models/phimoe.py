"""PhiMoE (Phi-3.5-MoE): LayerNorms, experts named w1/w3/w2 as Mixtral's, and sparsemixer
routing: two picks, each weighted by a softmax over the logits close enough to its own."""

import dataclasses

from converter.config import ArchitectureConfig, ConfigReader, Rope
from converter.config.architecture import extend
from converter.config.moe import MoeConfig, MoeRules
from converter.models.decoder import DecoderBody, DecoderLM
from converter.models.mixtral import MixtralLayer, MixtralMoe
from converter.registry import Family


@dataclasses.dataclass(frozen=True)
class PhimoeMoeConfig(MoeConfig):
    jitter_eps: float = 0.01  # a logit competes when within 2 * jitter_eps (relative) of the best


@dataclasses.dataclass(frozen=True)
class PhimoeConfig(ArchitectureConfig):
    lm_head_bias: bool = False


class PhimoeMoe(MixtralMoe):
    def kernel_routes(self) -> bool:
        return False

    def route(self, op, router, logits):
        """sparsemixer in eval mode: the best expert, weighted by the softmax over the logits
        within 2 * eps (relative) of its own; then the best of the others, weighted likewise
        among the others."""
        first, first_w = self._pick(op, logits, logits)
        rest = op.ScatterElements(
            logits, first, _neg_inf(op, op.GatherElements(logits, first, axis=1)), axis=1
        )
        second, second_w = self._pick(op, logits, rest)
        weights = op.ScatterElements(op.Mul(logits, 0.0), first, first_w, axis=1)
        return op.ScatterElements(weights, second, second_w, axis=1)

    def _pick(self, op, logits, candidates):
        best, index = op.TopK(candidates, [1], axis=-1, _outputs=2)
        factor = op.Max(op.Abs(logits), best)
        far = op.Greater(op.Div(op.Sub(best, logits), factor), 2 * self.moe.jitter_eps)
        gates = op.Softmax(op.Where(far, _neg_inf(op, candidates), candidates), axis=-1)
        return index, op.GatherElements(gates, index, axis=1)


def _neg_inf(op, like):
    """-inf in the shape and dtype of `like`."""
    return op.Add(op.Mul(like, 0.0), float("-inf"))


class PhimoeLayer(MixtralLayer):
    moe_cls = PhimoeMoe


class PhimoeBody(DecoderBody):
    layer_cls = PhimoeLayer


class PhimoeLM(DecoderLM):
    body_cls = PhimoeBody

    @property
    def head_bias(self) -> bool:
        return self.cfg.lm_head_bias


class PhimoeRules(MoeRules):
    def __init__(self):
        super().__init__(
            {"rms_norm_eps": "layer_norm_eps"},
            norm_type="layer",
            normalize=False,
            expert_size_keys=("intermediate_size",),
        )

    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        """transformers 5.24 turns PhiMoE's longrope by its short factors at every length,
        scaling cos and sin by `short_mscale` up to the original context, `long_mscale` past it."""
        rope = super().rope(r, head_dim)
        if rope is None or rope.kind == "default":
            return rope
        params = r.raw.get("rope_parameters") or r.raw.get("rope_scaling") or {}
        short, long = params.get("short_mscale"), params.get("long_mscale")
        if rope.kind != "longrope" or short != long or not isinstance(short, int | float):
            r.refuse(
                "rope_parameters",
                "PhiMoE's rope is read as default, or longrope with short_mscale = long_mscale",
            )
        return dataclasses.replace(rope, long_factor=rope.short_factor, attention_factor=short)

    def moe(self, r: ConfigReader, cfg: ArchitectureConfig) -> MoeConfig:
        moe = super().moe(r, cfg)
        if moe.top_k != 2:
            r.refuse("num_experts_per_tok", "sparsemixer routing picks exactly 2 experts")
        eps = r.float("router_jitter_noise", default=0.01)
        return PhimoeMoeConfig(**dataclasses.asdict(moe), jitter_eps=eps)

    def read(self, r: ConfigReader) -> PhimoeConfig:
        cfg = super().read(r)
        return extend(cfg, PhimoeConfig, lm_head_bias=r.bool("lm_head_bias", False))


FAMILIES = [
    Family(
        "phimoe",
        PhimoeLM,
        "LayerNorms, experts w1/w3/w2, sparsemixer top-2 routing in standard ops around the "
        "MoE kernel; q/k/v/o and LM head biases",
        ("microsoft/Phi-3.5-MoE-instruct",),
        rules=PhimoeRules(),
        category="moe",
    ),
]

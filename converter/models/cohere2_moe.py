"""Cohere 2 MoE (Command A MoE): Cohere 2's parallel layers (attention and MLP off one norm,
interleaved rotary, logit scale) whose MLPs are experts of the dense width. The router takes
the top-k logits, then softmaxes them (the renormalized softmax top-k) or takes their sigmoids
(renormalized when `norm_topk_prob`); shared experts are added to the experts' sum, or
averaged with it (`shared_expert_combination_strategy`). Dense prefix layers
(`mlp_layer_types`, or the first `first_k_dense_replace`) have a width of their own and a
sliding pattern of their own; with a prefix pattern of 1 they rotate although full-attention
layers otherwise have no positions. A set `rms_norm_eps` makes the norms RMSNorms."""

import dataclasses
from dataclasses import dataclass, fields

from converter.components.moe import SparseMoe
from converter.config import FULL, SLIDING, ArchitectureConfig, ConfigReader, Rope
from converter.config.moe import SIGMOID, MoeConfig, MoeRules
from converter.config.reader import MAX_DIM
from converter.errors import ConfigError
from converter.models.cohere import CohereBody, CohereLayer, CohereLM, CohereRules
from converter.registry import Family

_STRATEGIES = ("average", "sum")


@dataclass(frozen=True)
class Cohere2MoeConfig(MoeConfig):
    shared_average: bool = False  # (experts + shared) / 2 rather than their sum


def dense_prefix(r: ConfigReader) -> int:
    """`first_k_dense_replace`, which transformers reads only to fill the layer lists."""
    return r.int("first_k_dense_replace", default=0, lo=0, hi=r.int("num_hidden_layers"))


def mlp_layer_types(r: ConfigReader, layers: int, first_dense: int) -> tuple[bool, ...]:
    """Per layer: experts (True) or the dense MLP, from `mlp_layer_types` ("dense" / "sparse")
    or, without it, dense for the first `first_dense` layers."""
    kinds = r.raw.get("mlp_layer_types")
    if kinds is None:
        return tuple(i >= first_dense for i in range(layers))
    if not isinstance(kinds, list) or len(kinds) != layers:
        raise ConfigError(f"'mlp_layer_types' must list one entry per layer ({layers})")
    if any(kind not in ("dense", "sparse") for kind in kinds):
        raise ConfigError("'mlp_layer_types' entries must be 'dense' or 'sparse'")
    return tuple(kind == "sparse" for kind in kinds)


class Cohere2MoeRules(CohereRules, MoeRules):
    def qk_norm(self, r: ConfigReader) -> str | None:
        return None

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        first_dense = dense_prefix(r)
        if index < first_dense:
            pattern, position = r.int("prefix_dense_sliding_window_pattern", default=1), index
        else:
            pattern, position = r.int("sliding_window_pattern", default=4), index - first_dense
        return SLIDING if (position + 1) % pattern else FULL

    def layer_ropes(self, r: ConfigReader, head_dim: int, layer_types) -> tuple[Rope | None, ...]:
        rope = self.rope(r, head_dim)
        forced = r.int("prefix_dense_sliding_window_pattern", default=1) == 1
        sparse = self.sparse_layers(r, len(layer_types))
        return tuple(
            rope if kind == SLIDING or (forced and not is_sparse) else None
            for kind, is_sparse in zip(layer_types, sparse, strict=True)
        )

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        return mlp_layer_types(r, layers, dense_prefix(r))

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        cfg = super().read(r)
        if r.raw.get("rms_norm_eps") is not None:
            cfg = dataclasses.replace(cfg, norm_type="rms", norm_eps=r.float("rms_norm_eps"))
        dense = r.int("prefix_dense_intermediate_size", default=cfg.intermediate_size, hi=MAX_DIM)
        return dataclasses.replace(cfg, intermediate_size=dense)

    def moe(self, r: ConfigReader, cfg) -> MoeConfig:
        moe = super().moe(r, cfg)
        selection = r.str("expert_selection_fn", default="softmax")
        if selection not in ("softmax", "sigmoid"):
            r.refuse(
                "expert_selection_fn", "transformers' Cohere 2 MoE routes by softmax or sigmoid"
            )
        strategy = r.str("shared_expert_combination_strategy", default="average")
        if strategy not in _STRATEGIES:
            r.refuse(
                "shared_expert_combination_strategy",
                "transformers' Cohere 2 MoE combines the shared experts by 'average' or 'sum'",
            )
        shared = r.int("num_shared_experts", default=0, lo=0)
        generic = {f.name: getattr(moe, f.name) for f in fields(MoeConfig)}
        return Cohere2MoeConfig(
            **generic
            | {
                # the softmax over the top-k logits is the renormalized softmax top-k
                "scoring": SIGMOID if selection == "sigmoid" else moe.scoring,
                "normalize": selection == "softmax" or moe.normalize,
                "shared_size": moe.expert_size * shared,
                "shared_average": shared > 0 and strategy == "average",
            }
        )


class Cohere2Moe(SparseMoe):
    shared_name = "shared_experts"

    def forward(self, op, x):
        out = super().forward(op, x)  # experts + shared
        return op.Mul(out, 0.5) if self.moe.shared_average else out


class Cohere2MoeLayer(CohereLayer):
    moe_cls = Cohere2Moe


class Cohere2MoeBody(CohereBody):
    layer_cls = Cohere2MoeLayer


class Cohere2MoeLM(CohereLM):
    body_cls = Cohere2MoeBody


FAMILIES = [
    Family(
        "cohere2_moe",
        Cohere2MoeLM,
        "Cohere 2 with experts (softmax or sigmoid over the top-k logits) and shared experts "
        "summed or averaged in; dense prefix layers of their own width and sliding pattern, "
        "rotated when that pattern is 1",
        rules=Cohere2MoeRules(
            norm_type="layer",
            norm_bias=False,
            layout="parallel",
            expert_size_keys=("intermediate_size",),
        ),
        category="moe",
    ),
]

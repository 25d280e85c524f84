"""Mixture-of-experts settings: how many experts, how a token picks them, which layers have them.

`MoeRules` reads the keys most MoE families share (each under the spellings transformers'
configurations use); a family's rules pass its own defaults and read its routing twists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from converter.config.architecture import ArchitectureConfig, ConfigRules
from converter.config.reader import MAX_DIM, ConfigReader
from converter.errors import ConfigError

MAX_EXPERTS = 1 << 12

SOFTMAX, SIGMOID = "softmax", "sigmoid"


@dataclass(frozen=True)
class MoeConfig:
    num_experts: int
    top_k: int
    expert_size: int  # the inner width of one expert
    normalize: bool  # the top-k weights rescaled to sum to 1
    sparse_layers: tuple[bool, ...]  # per layer: experts (True) or the dense MLP
    scoring: str = SOFTMAX  # how router logits become scores: softmax or sigmoid
    router_bias: bool = False
    expert_bias: bool = False  # biases on the experts' projections (GPT-OSS)
    correction_bias: bool = False  # a learned bias added to scores for selection only
    groups: int = 1  # experts in `groups` groups, of which the best `topk_groups` compete
    topk_groups: int = 1
    routed_scaling: float = 1.0  # routing weights multiplied by this after selection
    shared_size: int = 0  # inner width of the shared expert(s) every token runs, 0: none
    # GPT-OSS's clamped SwiGLU: gate * sigmoid(alpha * gate) * (up + beta), clamped at limit
    swiglu_alpha: float = 1.0
    swiglu_beta: float = 0.0
    swiglu_limit: float | None = None

    def __post_init__(self) -> None:
        if self.top_k > self.num_experts:
            raise ConfigError(
                f"each token picks {self.top_k} experts (top-k) but there are only "
                f"{self.num_experts}"
            )
        if self.num_experts % self.groups:
            raise ConfigError(
                f"'n_group' = {self.groups} does not divide the {self.num_experts} experts"
            )
        if not 1 <= self.topk_groups <= self.groups:
            raise ConfigError(
                f"'topk_group' = {self.topk_groups} must be between 1 and 'n_group' = {self.groups}"
            )
        if self.groups > 1 and self.top_k > self.topk_groups * self.num_experts // self.groups:
            raise ConfigError(
                f"top-k {self.top_k} exceeds the experts of the {self.topk_groups} groups "
                "a token may pick from"
            )

    def is_sparse(self, index: int) -> bool:
        return self.sparse_layers[index]


def sigmoid_renormalized(
    moe: MoeConfig, *, scaling: float, shared_size: int, sparse_layers: tuple[bool, ...]
) -> MoeConfig:
    """`moe` routed as DeepSeek-V3 routes within one group: sigmoid scores shifted by a
    selection-only correction bias, the picks' scores renormalized, then scaled."""
    return replace(
        moe,
        normalize=True,
        scoring=SIGMOID,
        correction_bias=True,
        routed_scaling=scaling,
        shared_size=shared_size,
        sparse_layers=sparse_layers,
    )


class MoeRules(ConfigRules):
    """The generic reading plus `cfg.moe`. `normalize` is the family's default for
    `norm_topk_prob`; `expert_size_keys` where its config gives an expert's width (the dense
    `intermediate_size` when none is set)."""

    def __init__(
        self,
        aliases=None,
        *,
        normalize: bool = False,
        expert_size_keys: tuple[str, ...] = ("moe_intermediate_size",),
        **traits,
    ) -> None:
        super().__init__(aliases, **traits)
        self.normalize, self.expert_size_keys = normalize, expert_size_keys

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        cfg = super().read(r)
        return replace(cfg, moe=self.moe(r, cfg))

    def moe(self, r: ConfigReader, cfg: ArchitectureConfig) -> MoeConfig:
        return MoeConfig(
            num_experts=self.num_experts(r),
            top_k=self.top_k(r),
            expert_size=r.int(*self.expert_size_keys, default=cfg.intermediate_size, hi=MAX_DIM),
            normalize=r.bool("norm_topk_prob", self.normalize),
            sparse_layers=self.sparse_layers(r, cfg.num_hidden_layers),
        )

    def num_experts(self, r: ConfigReader) -> int:
        keys = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
        value = r.get(*keys)
        if value == 0:
            key = next(k for k in keys if r.raw.get(k) is not None)
            raise ConfigError(f"'{key}' = 0: a mixture of experts needs at least one expert")
        return r.int(*keys, hi=MAX_EXPERTS)

    def top_k(self, r: ConfigReader) -> int:
        keys = ("num_experts_per_tok", "moe_k", "moe_topk", "top_k")
        return r.int(*keys, hi=MAX_EXPERTS)

    def sparse_layers(self, r: ConfigReader, layers: int) -> tuple[bool, ...]:
        """Which layers run experts: all but `mlp_only_layers`, every `decoder_sparse_step`-th
        and none of the first `first_k_dense_replace` (the keys Qwen and DeepSeek use)."""
        dense = r.raw.get("mlp_only_layers") or []
        if not isinstance(dense, list) or not all(
            isinstance(i, int) and 0 <= i < layers for i in dense
        ):
            raise ConfigError(f"'mlp_only_layers' must list layer indices below {layers}")
        step = r.int("decoder_sparse_step", default=1)
        first_dense = r.int("first_k_dense_replace", default=0, lo=0, hi=layers)
        return tuple(
            i not in dense and (i + 1) % step == 0 and i >= first_dense for i in range(layers)
        )

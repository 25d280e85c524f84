"""DBRX: a fused `Wqkv` clamped to clip_qkv, LayerNorms without bias, and experts in every
layer whose softmax top-k weights are divided by their p-norm (`moe_normalize_expert_weights`;
p = 1 is renormalization). The experts are saved fused: `w1` (gate), `v1` (up) and `w2`
(down, transposed), each [E * I, H]. Attention and FFN settings nest in `attn_config` and
`ffn_config`."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import make_norm
from converter.components.moe import Router, SparseMoe
from converter.config import ArchitectureConfig, ConfigReader
from converter.config.moe import MoeConfig, MoeRules
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import DecoderBody, DecoderLM, attention_spec
from converter.models.mpt import MptAttention
from converter.registry import Family
from converter.weights import Assembly

_FFN_NAMES = {"gate": "w1", "up": "v1", "down": "w2"}


@dataclasses.dataclass(frozen=True)
class DbrxConfig(ArchitectureConfig):
    expert_norm: float | None = 1.0  # p of the norm dividing the top-k weights, None: none


class DbrxExpertStacks:
    """`{prefix}.mlp.{w1,v1,w2}` [E * I, H]: gate and up as [E, I, H] rows, down transposed."""

    def weight(self, prefix: str, part: str, shape: tuple[int, int, int]) -> Assembly:
        experts, out, inner = shape
        rows = (experts, inner, out) if part == "down" else shape
        name = ((f"{prefix}.mlp.{_FFN_NAMES[part]}", (rows[0] * rows[1], rows[2])),)
        if part == "down":
            return Assembly(name, lambda a: np.ascontiguousarray(a[0].reshape(rows).swapaxes(1, 2)))
        return Assembly(name, lambda a: a[0].reshape(rows))


class DbrxRouter(nn.Module):
    """The router's projection under `layer` (no bias)."""

    e_score_correction_bias = None

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        self.layer = Router(cfg, dtype)

    def forward(self, op, flat):
        return self.layer(op, flat)


class DbrxMoe(SparseMoe):
    router_name, router_cls, layout = "router", DbrxRouter, DbrxExpertStacks()

    def __init__(self, cfg: DbrxConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        self.p = cfg.expert_norm

    def kernel_routes(self) -> bool:
        return self.p in (None, 1.0)  # no norm, or renormalization: the kernel's own

    def route(self, op, router, logits):
        if self.kernel_routes():
            return super().route(op, router, logits)
        scores = op.Softmax(logits, axis=-1)
        top, picked = op.TopK(scores, [self.moe.top_k], axis=-1, _outputs=2)
        norm = op.Pow(op.ReduceSum(op.Pow(top, self.p), [-1], keepdims=1), 1.0 / self.p)
        return op.ScatterElements(op.Mul(scores, 0.0), picked, op.Div(top, norm), axis=1)


class DbrxNormAttentionNorm(nn.Module):
    def __init__(self, cfg: DbrxConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.norm_1 = make_norm(cfg, cfg.hidden_size, dtype)
        self.attn = MptAttention(cfg, dtype, attention_spec(cfg, index))
        self.norm_2 = make_norm(cfg, cfg.hidden_size, dtype)

    def forward(self, op, x, kernel, past_key, past_value):
        """The residual sum after attention, its norm for the FFN, and the cache."""
        a, key, value = self.attn(op, self.norm_1(op, x), kernel, past_key, past_value)
        x = op.Add(x, a)
        return x, self.norm_2(op, x), key, value


class DbrxBlock(nn.Module):
    def __init__(self, cfg: DbrxConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.index = index
        self.norm_attn_norm = DbrxNormAttentionNorm(cfg, index, dtype, ep)
        self.ffn = DbrxMoe(cfg, dtype, ep)

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a residual sum, but the first block's first reads the embeddings
        return {"skip_norms": 1 + int(self.index > 0)} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        x, h, key, value = self.norm_attn_norm(op, x, kernel, past_key, past_value)
        return op.Add(x, self.ffn(op, h)), key, value


class DbrxBody(DecoderBody):
    layer_cls = DbrxBlock
    embedding_name, layers_name, final_norm_name = "wte", "blocks", "norm_f"


class DbrxLM(DecoderLM):
    body_cls = DbrxBody
    body_name = "transformer"


class DbrxRules(MoeRules):
    def activation(self, r: ConfigReader) -> str:
        ffn = r.section("ffn_config")
        act = ffn.raw.get("ffn_act_fn") or {"name": "silu"}
        if not isinstance(act, dict) or set(act) != {"name"} or not isinstance(act["name"], str):
            ffn.refuse("ffn_act_fn", "DBRX's experts take an activation by name, without arguments")
        return act["name"]

    def read(self, r: ConfigReader) -> DbrxConfig:
        attn, ffn = r.section("attn_config"), r.section("ffn_config")
        r.raw["num_key_value_heads"] = attn.int("kv_n_heads", default=1)
        r.raw["intermediate_size"] = ffn.int("ffn_hidden_size", default=3584)
        r.raw.setdefault("max_position_embeddings", r.raw.get("max_seq_len"))
        if r.raw.get("rope_parameters") is None and attn.has("rope_theta"):
            # a config written before transformers 5 keeps its base here (transformers 5.24
            # reads only the top-level one, falling back to 10000: not what DBRX trained with)
            r.raw["rope_theta"] = attn.float("rope_theta")
        cfg = super().read(r)
        p = ffn.raw.get("moe_normalize_expert_weights", 1.0)  # null: no normalization
        if p is not None:
            p = ffn.float("moe_normalize_expert_weights", default=1.0)
        moe = self.dbrx_moe(ffn, cfg, normalize=p == 1.0)
        fields = vars(cfg) | {"clip_qkv": attn.optional_float("clip_qkv"), "moe": moe}
        return DbrxConfig(**fields, expert_norm=p)

    def dbrx_moe(self, ffn: ConfigReader, cfg, normalize: bool) -> MoeConfig:
        ffn.raw.setdefault("moe_num_experts", 4)  # transformers' defaults
        return MoeConfig(
            num_experts=self.num_experts(ffn),
            top_k=ffn.int("moe_top_k", default=1),
            expert_size=cfg.intermediate_size,
            normalize=normalize,
            sparse_layers=(True,) * cfg.num_hidden_layers,
        )

    def moe(self, r: ConfigReader, cfg: ArchitectureConfig) -> None:
        return None  # read from ffn_config in `read`


FAMILIES = [
    Family(
        "dbrx",
        DbrxLM,
        "fused clamped Wqkv, bias-free LayerNorms, fused expert stacks, p-norm top-k weights",
        ("databricks/dbrx-instruct",),
        rules=DbrxRules(norm_type="layer", norm_bias=False, fused_qkv=True),
        category="moe",
    ),
]

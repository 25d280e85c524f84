"""StableLM (2 / 3B-4E1T): LayerNorm, partial rotary, q/k/v biases (`use_qkv_bias`), optional
per-head q/k LayerNorms, attention and MLP in parallel off one norm (`use_parallel_residual`)."""

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention
from converter.components.norms import HeadwiseLayerNorm
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class HeadScale(nn.Module):
    """One head's scale-only LayerNorm: `weight` [head_dim]."""

    def __init__(self, head_dim: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([head_dim], dtype)

    def forward(self, op):
        return self.weight  # called, so the weight takes this module's name


class StableLmHeadNorms(HeadwiseLayerNorm):
    """A LayerNorm per head (`norms.{h}.weight`); the graph joins their scales, and saving folds
    the join into one initializer."""

    def __init__(self, heads: int, head_dim: int, eps: float, dtype: ir.DataType):
        super().__init__(head_dim, eps, dtype)
        self.norms = nn.ModuleList([HeadScale(head_dim, dtype) for _ in range(heads)])

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"packed_tensors": int(len(self.norms) > 1)}

    def scale(self, op):
        weights = [norm(op) for norm in self.norms]
        joined = weights[0] if len(weights) == 1 else op.Concat(*weights, axis=0)
        return op.Reshape(joined, [len(weights), -1])


class StableLmAttention(Attention):
    qk_norm_names = ("q_layernorm", "k_layernorm")

    def make_qk_norm(self, cfg, heads: int, dtype: ir.DataType):
        return StableLmHeadNorms(heads, cfg.head_dim, cfg.norm_eps, dtype)


class StableLmLayer(DecoderLayer):
    attention_cls = StableLmAttention


class StableLmBody(DecoderBody):
    layer_cls = StableLmLayer


class StableLmLM(DecoderLM):
    body_cls = StableLmBody


class StableLmRules(ConfigRules):
    def qk_norm(self, r: ConfigReader) -> str | None:
        return "head" if r.bool("qk_layernorm", default=False) else None

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        parallel = r.bool("use_parallel_residual", default=False)
        return dataclasses.replace(
            super().read(r),
            layout="parallel" if parallel else "pre",
            qkv_bias=r.bool("use_qkv_bias", default=False),
        )


FAMILIES = [
    Family(
        "stablelm",
        StableLmLM,
        "LayerNorm, partial rotary, optional q/k/v biases, per-head q/k LayerNorms, parallel "
        "residual",
        ("stabilityai/stablelm-2-1_6b", "stabilityai/stablelm-3b-4e1t"),
        rules=StableLmRules(norm_type="layer", o_bias=False, mlp_bias=False),
    ),
]

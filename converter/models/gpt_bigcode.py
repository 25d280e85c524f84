"""GPT-BigCode (SantaCoder, StarCoder): GPT-Neo's Linear blocks with one fused `c_attn`, laid
out [q | k | v] with a single key/value head (multi-query), or per head [q_h | k_h | v_h]."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import FcProjMLP, Linear
from converter.components.attention import AttentionSpec
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.gpt2 import GPT2LM, GPT2Block, GPT2Body
from converter.registry import Family


class GPTBigCodeAttention(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, spec: AttentionSpec):
        super().__init__()
        self.spec = spec
        heads, kv_heads, d = spec.heads, spec.kv_heads, spec.head_dim
        self.sizes = [heads * d, kv_heads * d, kv_heads * d]
        self.multi_query = kv_heads == 1
        self.c_attn = Linear(cfg.hidden_size, sum(self.sizes), True, dtype)
        self.c_proj = Linear(heads * d, cfg.hidden_size, True, dtype)

    def _split(self, op, qkv):
        if self.multi_query:
            return op.Split(qkv, self.sizes, axis=-1, _outputs=3)
        per_head = op.Reshape(qkv, [0, 0, self.spec.heads, 3 * self.spec.head_dim])
        parts = op.Split(per_head, axis=-1, num_outputs=3, _outputs=3)
        return [op.Reshape(part, [0, 0, -1]) for part in parts]

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        q, k, v = self._split(op, self.c_attn(op, x))
        y, key, value = kernel(op, q, k, v, past_key, past_value, self.spec)
        return self.c_proj(op, y), key, value


class GPTBigCodeBlock(GPT2Block):
    attention_cls, mlp_cls = GPTBigCodeAttention, FcProjMLP


class GPTBigCodeBody(GPT2Body):
    layer_cls = GPTBigCodeBlock


class GPTBigCodeLM(GPT2LM):
    body_cls = GPTBigCodeBody


class GPTBigCodeRules(ConfigRules):
    """attention_softmax_in_fp32 and scale_attention_softmax_in_fp32 choose where half-precision
    runs upcast; the graph's attention kernels take their softmax in float32 regardless."""

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        if r.bool("add_cross_attention", False):
            r.refuse("add_cross_attention", "a decoder-only export has no encoder to attend to")
        cfg = super().read(r)
        kv_heads = 1 if r.bool("multi_query", True) else cfg.num_attention_heads
        return dataclasses.replace(cfg, num_key_value_heads=kv_heads)


FAMILIES = [
    Family(
        "gpt_bigcode",
        GPTBigCodeLM,
        "learned positions, fused c_attn, multi-query attention",
        ("bigcode/gpt_bigcode-santacoder", "bigcode/tiny_starcoder_py"),
        rules=GPTBigCodeRules(
            norm_type="layer", qkv_bias=True, o_bias=True, mlp_bias=True, rope=False
        ),
        prefix="transformer.",
    ),
]

"""BLOOM: ALiBi positions, LayerNorm after the embeddings, a fused `query_key_value` laid out
head by head ([heads, q/k/v, head_dim]); optionally the residual taken after the norm."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, MegatronMLP
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.config.alibi import Alibi, geometric_slopes
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import DecoderBody, DecoderLM, attention_spec
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs

# BLOOM's training sequence length: ALiBi has no position table that would bound the context.
TRAINED_LENGTH = 2048


@dataclass(frozen=True)
class BloomConfig(ArchitectureConfig):
    residual_after_norm: bool = False  # apply_residual_connection_post_layernorm


class GroupedQKVAttention(nn.Module):
    """`query_key_value` whose output is `groups` blocks of [q_per_group queries, 1 key, 1 value]
    heads (BLOOM: a block per head; Falcon: per kv head, or one block for multi-query), and the
    output projection `dense`."""

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, groups: int):
        super().__init__()
        d, heads = cfg.head_dim, cfg.num_attention_heads
        self.groups, self.q_per_group = groups, heads // groups
        qkv_size = (heads + 2 * groups) * d
        self.query_key_value = Linear(cfg.hidden_size, qkv_size, cfg.qkv_bias, dtype)
        self.dense = Linear(heads * d, cfg.hidden_size, cfg.o_bias, dtype)
        self.spec = attention_spec(cfg, index)

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        d = self.spec.head_dim
        blocks = op.Reshape(self.query_key_value(op, x), [0, 0, self.groups, -1, d])
        parts = op.Split(blocks, [self.q_per_group, 1, 1], axis=3, _outputs=3)
        q, k, v = (op.Reshape(p, [0, 0, -1]) for p in parts)
        y, key, value = kernel(op, q, k, v, past_key, past_value, self.spec)
        return self.dense(op, y), key, value


class BloomBlock(nn.Module):
    def __init__(self, cfg: BloomConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.index, self.residual_after_norm = index, cfg.residual_after_norm
        self.input_layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.self_attention = GroupedQKVAttention(cfg, index, dtype, cfg.num_attention_heads)
        self.post_attention_layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = MegatronMLP(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # post_attention_layernorm reads a sum in every block, input_layernorm after block 0
        return {"skip_norms": 1 + int(self.index > 0)} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.input_layernorm(op, x)
        a, key, value = self.self_attention(op, h, kernel, past_key, past_value)
        x = op.Add(h if self.residual_after_norm else x, a)
        h = self.post_attention_layernorm(op, x)
        return op.Add(h if self.residual_after_norm else x, self.mlp(op, h)), key, value


class BloomBody(DecoderBody):
    layer_cls = BloomBlock
    embedding_name, layers_name, final_norm_name = "word_embeddings", "h", "ln_f"

    def __init__(self, cfg: BloomConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        self.word_embeddings_layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def embed(self, op, inputs: DecoderInputs):
        return self.word_embeddings_layernorm(op, super().embed(op, inputs))


class BloomLM(DecoderLM):
    body_cls = BloomBody
    body_name = "transformer"


class BloomRules(ConfigRules):
    def max_positions(self, r: ConfigReader) -> int:
        return TRAINED_LENGTH

    def activation(self, r: ConfigReader) -> str:
        return "gelu_pytorch_tanh"  # BloomGelu: the tanh approximation

    def read(self, r: ConfigReader) -> BloomConfig:
        cfg = super().read(r)
        # the MLP is always 4 x hidden; pretraining_tp/slow_but_exact only split the same sums
        fields = vars(cfg) | {
            "intermediate_size": 4 * cfg.hidden_size,
            "alibi": Alibi(geometric_slopes(cfg.num_attention_heads)),
        }
        residual = r.bool("apply_residual_connection_post_layernorm", default=False)
        return BloomConfig(**fields, residual_after_norm=residual)


FAMILIES = [
    Family(
        "bloom",
        BloomLM,
        "ALiBi, LayerNorm after the embeddings, head-interleaved fused query_key_value",
        ("bigscience/bloom-560m",),
        rules=BloomRules(norm_type="layer", rope=False, qkv_bias=True, o_bias=True, mlp_bias=True),
        prefix="transformer.",
    ),
]

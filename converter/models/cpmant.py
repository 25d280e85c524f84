"""CPM-Ant: a prefix LM. The first call prepends `prompt_length` learned prompt tokens and
attends both ways over prompt and input; each later token attends to everything before it.
Attention adds a learned bias per head, bucketed by relative position within a segment (the
prompt is segment 0, tokens 2, padding 0) and by the pair of segments across them.

transformers reads padding from token id 0; the graph reads it from attention_mask (the
tokenizer pads with id 0, so the two agree). The cache holds the prompt too: it is
`prompt_length` longer than attention_mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, Linear, RMSNorm, activation
from converter.components.cache import LayerCache, kv_cache
from converter.components.masks import padding_mask
from converter.config import ArchitectureConfig, ConfigReader, extend
from converter.errors import ConfigError
from converter.execution_providers import GQA, SKIP_NORM
from converter.models.decoder import attention_spec, tied_head_fusions
from converter.models.positional import MultiHeadRules
from converter.registry import Family

INPUT_SEGMENT = 2  # the segment of input tokens (the prompt and padding are segment 0)
PROMPT_TYPE = 2  # which of the prompt_types tables the prompt tokens come from


@dataclass(frozen=True)
class CpmAntConfig(ArchitectureConfig):
    prompt_types: int = 32
    prompt_length: int = 32
    segment_types: int = 32
    position_bias_num_buckets: int = 512
    position_bias_max_distance: int = 2048


class CpmAntAttention(Attention):
    qkv_names = ("project_q", "project_k", "project_v")
    out_proj_name = "attention_out"


class SelfAttentionBlock(nn.Module):
    def __init__(self, cfg: CpmAntConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.layernorm_before_attention = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.self_attention = CpmAntAttention(cfg, dtype, attention_spec(cfg, index))

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.layernorm_before_attention(op, x)
        a, key, value = self.self_attention(op, h, kernel, past_key, past_value)
        return op.Add(x, a), key, value


class GatedGELU(nn.Module):
    def __init__(self, cfg: CpmAntConfig, dtype: ir.DataType):
        super().__init__()
        self.w_0 = Linear(cfg.hidden_size, cfg.intermediate_size, False, dtype)
        self.w_1 = Linear(cfg.hidden_size, cfg.intermediate_size, False, dtype)

    def forward(self, op, x):
        return op.Mul(activation(op, "gelu", self.w_0(op, x)), self.w_1(op, x))


class FeedForward(nn.Module):
    def __init__(self, cfg: CpmAntConfig, dtype: ir.DataType):
        super().__init__()
        self.w_in = GatedGELU(cfg, dtype)
        self.w_out = Linear(cfg.intermediate_size, cfg.hidden_size, False, dtype)

    def forward(self, op, x):
        return self.w_out(op, self.w_in(op, x))


class FFNBlock(nn.Module):
    def __init__(self, cfg: CpmAntConfig, dtype: ir.DataType):
        super().__init__()
        self.layernorm_before_ffn = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.ffn = FeedForward(cfg, dtype)

    def forward(self, op, x):
        return op.Add(x, self.ffn(op, self.layernorm_before_ffn(op, x)))


class TransformerBlock(nn.Module):
    def __init__(self, cfg: CpmAntConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.self_att = SelfAttentionBlock(cfg, index, dtype)
        self.ffn = FFNBlock(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a sum (the first layer's first one: token + segment embeddings)
        return {"skip_norms": 2} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        x, key, value = self.self_att(op, x, kernel, past_key, past_value)
        return self.ffn(op, x), key, value


class Encoder(nn.Module):
    def __init__(self, cfg: CpmAntConfig, dtype: ir.DataType):
        super().__init__()
        self.layers = nn.ModuleList(
            [TransformerBlock(cfg, i, dtype) for i in range(cfg.num_hidden_layers)]
        )
        self.output_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1} if plan.has(SKIP_NORM) else {}  # output_layernorm

    def forward(self, op, x, kernel, past):
        presents = []
        for layer, (past_key, past_value) in zip(self.layers, past, strict=True):
            x, key, value = layer(op, x, kernel, past_key, past_value)
            presents.append((key, value))
        return self.output_layernorm(op, x), presents


def position_buckets(op, relative, buckets: int, max_distance: int):
    """transformers' CPM-Ant buckets of relative positions (key - query, int64): half the
    buckets for keys after the query; distances below a quarter exact, log-spaced beyond."""
    half = buckets // 2
    exact = half // 2
    after = op.Mul(op.Cast(op.Greater(relative, 0), to=ir.DataType.INT64), half)
    distance = op.Abs(relative)
    ratio = op.Div(op.Cast(distance, to=ir.DataType.FLOAT), float(exact))
    # in torch's order and float32 rounding: log(ratio) / log(max / exact) * (half - exact)
    scaled = op.Div(op.Log(ratio), math.log(max_distance / exact))
    scaled = op.Mul(scaled, float(half - exact))
    far = op.Add(op.Cast(scaled, to=ir.DataType.INT64), exact)  # Cast truncates, as torch
    far = op.Min(far, half - 1)
    return op.Add(after, op.Where(op.Less(distance, exact), distance, far))


class SegmentPositionBias(nn.Module):
    """A learned bias per head: by relative position bucket within a segment, by the pair of
    segments across two."""

    def __init__(self, cfg: CpmAntConfig, dtype: ir.DataType):
        super().__init__()
        self.segments, self.buckets = cfg.segment_types, cfg.position_bias_num_buckets
        self.max_distance = cfg.position_bias_max_distance
        rows = self.segments * self.segments + self.buckets
        self.relative_attention_bias = nn.Parameter([rows, cfg.num_attention_heads], dtype)

    def forward(self, op, query_segments, key_segments, relative):
        """[batch, heads, queries, keys] from segments [batch, queries] and [batch, keys] and
        relative positions [queries, keys]."""
        queries, keys = op.Unsqueeze(query_segments, [2]), op.Unsqueeze(key_segments, [1])
        within = position_buckets(op, relative, self.buckets, self.max_distance)
        across = op.Add(op.Add(op.Mul(queries, self.segments), keys), self.buckets)
        rows = op.Where(op.Equal(queries, keys), within, across)
        bias = op.Gather(self.relative_attention_bias, rows, axis=0)
        return op.Transpose(bias, perm=[0, 3, 1, 2])


class PrefixAttention:
    """The standard Attention op with one additive mask for every layer: the position bias
    plus padding, and no causal part (within one call, attention goes both ways)."""

    def __init__(self, mask):
        self.mask = mask

    def __call__(self, op, q, k, v, past_key, past_value, spec):
        return op.Attention(
            q,
            k,
            v,
            self.mask,
            past_key,
            past_value,
            q_num_heads=spec.heads,
            kv_num_heads=spec.kv_heads,
            scale=spec.scale,
            _outputs=3,
        )


class CpmAntModel(nn.Module):
    def __init__(self, cfg: CpmAntConfig, dtype: ir.DataType):
        super().__init__()
        self.dtype = dtype
        hidden, prompt = cfg.hidden_size, cfg.prompt_length
        self.encoder = Encoder(cfg, dtype)
        self.segment_embedding = Embedding(cfg.segment_types, hidden, dtype)
        rows = cfg.vocab_size + cfg.prompt_types * prompt
        self.input_embedding = Embedding(rows, hidden, dtype)
        self.position_bias = SegmentPositionBias(cfg, dtype)
        first = cfg.vocab_size + PROMPT_TYPE * prompt
        self.prompt_ids = np.arange(first, first + prompt, dtype=np.int64)

    def _embed(self, op, inputs, batch, prompt):
        """The rows of the prompt's first `prompt` ids (the prompt_length or 0) and the input,
        through one Gather of the table (which int4 may quantize)."""
        ids = op.Slice(op.Constant(value=ir.tensor(self.prompt_ids)), [0], prompt)
        if inputs.embedded:
            rows = op.Unsqueeze(self.input_embedding(op, ids), [0])
            rows = op.Expand(rows, op.Concat(batch, op.Shape(rows, start=1), axis=0))
            return op.Concat(rows, inputs.tokens, axis=1)
        ids = op.Expand(op.Unsqueeze(ids, [0]), op.Concat(batch, prompt, axis=0))
        return self.input_embedding(op, op.Concat(ids, inputs.tokens, axis=1))

    def forward(self, op, inputs):
        batch, new = (
            op.Shape(inputs.tokens, start=0, end=1),
            op.Shape(inputs.tokens, start=1, end=2),
        )
        # only the first call (nothing cached yet) reads the prompt
        first_call = op.Equal(op.Shape(inputs.past[0][0], start=2, end=3), 0)
        prompt = op.Mul(op.Cast(first_call, to=ir.DataType.INT64), len(self.prompt_ids))
        length = op.Add(prompt, new)
        # keys: the prompt (always cached, segment 0) then every token so far (padding too)
        prompt_ones = op.Expand(
            op.Constant(value_int=1), op.Concat(batch, [len(self.prompt_ids)], axis=0)
        )
        key_valid = op.Concat(prompt_ones, inputs.attention_mask, axis=1)
        key_segments = op.Concat(
            op.Mul(prompt_ones, 0), op.Mul(inputs.attention_mask, INPUT_SEGMENT), axis=1
        )
        query_segments = op.Slice(key_segments, op.Neg(length), [np.iinfo(np.int64).max], [1])
        x = op.Add(
            self._embed(op, inputs, batch, prompt), self.segment_embedding(op, query_segments)
        )
        total = op.Shape(key_valid, start=1, end=2)
        keys = op.Range(0, op.Squeeze(total), 1)
        queries = op.Range(op.Squeeze(op.Sub(total, length)), op.Squeeze(total), 1)
        relative = op.Sub(op.Unsqueeze(keys, [0]), op.Unsqueeze(queries, [1]))
        bias = self.position_bias(op, query_segments, key_segments, relative)
        kernel = PrefixAttention(op.Add(bias, padding_mask(op, key_valid, self.dtype)))
        hidden, presents = self.encoder(op, x, kernel, inputs.past)
        return op.Slice(hidden, op.Neg(new), [np.iinfo(np.int64).max], [1]), presents


class CpmAntLM(nn.Module):
    def __init__(self, cfg: CpmAntConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.cfg, self.ep = cfg, ep
        self.cpmant = CpmAntModel(cfg, dtype)
        self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, False, dtype, head=True)

    def embedding_table(self):
        return self.cpmant.input_embedding.weight

    def caches(self) -> list[LayerCache]:
        heads, head_dim = self.cfg.num_attention_heads, self.cfg.head_dim
        return [kv_cache(heads, head_dim) for _ in range(self.cfg.num_hidden_layers)]

    def fallbacks(self) -> list[str]:
        if not self.ep.has(GQA):
            return []
        return [
            "standard Attention op instead of GroupQueryAttention: CPM-Ant attends both ways "
            "within a call and adds a learned position bias, and the kernel is causal and "
            "takes no bias"
        ]

    def expected_fusions(self, plan) -> dict[str, int]:
        return tied_head_fusions(self.cfg, plan)

    def forward(self, op, inputs):
        hidden, presents = self.cpmant(op, inputs)
        return self.lm_head(op, hidden), presents


class CpmAntRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> CpmAntConfig:
        r.alias(dim_head="head_dim", dim_ff="intermediate_size", eps="rms_norm_eps")
        r.alias(position_bias_max_distance="max_position_embeddings")
        prompt_types = r.int("prompt_types")
        if prompt_types <= PROMPT_TYPE:
            raise ConfigError(
                f"'prompt_types' = {prompt_types}: the prompt tokens are of type {PROMPT_TYPE}"
            )
        return extend(
            super().read(r),
            CpmAntConfig,
            tie_word_embeddings=False,  # lm_head is a weight of its own: transformers ties none
            prompt_types=prompt_types,
            prompt_length=r.int("prompt_length"),
            segment_types=r.int("segment_types", lo=INPUT_SEGMENT + 1),
            position_bias_num_buckets=r.int("position_bias_num_buckets", lo=4),
            position_bias_max_distance=r.int("position_bias_max_distance"),
        )

    def activation(self, r: ConfigReader) -> str:
        return "gelu"  # of its gated feed-forward, which config.json does not name


FAMILIES = [
    Family(
        "cpmant",
        CpmAntLM,
        "prefix LM: learned prompt, segment and relative-position attention bias, RMSNorm",
        ("openbmb/cpm-ant-10b",),
        rules=CpmAntRules(rope=False),
        reference_feeds_whole_sequence=True,
    ),
]

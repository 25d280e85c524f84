"""GPT-NeoX (Pythia) and GPT-NeoX-Japanese: one `query_key_value` projection whose rows are
grouped per head ([q, k, v] of head 0, then head 1, ...), partial rotary, LayerNorm, an
`embed_out` head.

GPT-NeoX runs attention and MLP in parallel by default (`use_parallel_residual`), each off its
own norm: x + attention(input_layernorm(x)) + mlp(post_attention_layernorm(x)). The Japanese
model is sequential, without biases except one beside the last layer's output projection.
"""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, MegatronMLP, make_norm
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules, Rope, parse_rope
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import DecoderBody, DecoderLM, attention_spec
from converter.registry import Family


class NeoXAttention(Attention):
    qkv_proj_name = "query_key_value"
    out_proj_name = "dense"
    qk_norm_names = ("q_layernorm", "k_layernorm")

    def _project(self, op, x):
        spec = self.spec
        per_head = [0, 0, spec.heads, 3 * spec.head_dim]
        qkv = op.Reshape(self.query_key_value(op, x), per_head)
        q, k, v = op.Split(qkv, axis=-1, num_outputs=3, _outputs=3)
        return [op.Reshape(t, [0, 0, -1]) for t in (q, k, v)]


class NeoXJapaneseAttention(NeoXAttention):
    def __init__(self, cfg, dtype: ir.DataType, spec, last: bool):
        super().__init__(cfg, dtype, spec)
        # only the last layer's output projection has a bias, stored beside it
        self.dense_bias = nn.Parameter([cfg.hidden_size], dtype) if last else None

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        y, key, value = super().forward(op, x, kernel, past_key, past_value)
        return (y if self.dense_bias is None else op.Add(y, self.dense_bias)), key, value


class NeoXLayer(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.index, self.parallel = index, cfg.layout == "parallel"
        self.input_layernorm = make_norm(cfg, cfg.hidden_size, dtype)
        self.post_attention_layernorm = make_norm(cfg, cfg.hidden_size, dtype)
        self.attention = self.make_attention(cfg, index, dtype)
        self.mlp = MegatronMLP(cfg, dtype)

    def make_attention(self, cfg, index: int, dtype: ir.DataType) -> NeoXAttention:
        return NeoXAttention(cfg, dtype, attention_spec(cfg, index))

    def expected_fusions(self, plan) -> dict[str, int]:
        """input_layernorm reads the previous layer's sum; in parallel layers the MLP's norm
        reads the same sum (one fusion absorbs it), in sequential ones the attention sum."""
        if not plan.has(SKIP_NORM):
            return {}
        return {"skip_norms": int(self.index > 0) + int(not self.parallel)}

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.input_layernorm(op, x)
        a, key, value = self.attention(op, h, kernel, past_key, past_value)
        if self.parallel:
            m = self.mlp(op, self.post_attention_layernorm(op, x))
            return op.Add(op.Add(x, a), m), key, value
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.post_attention_layernorm(op, x))), key, value


class NeoXJapaneseLayer(NeoXLayer):
    def make_attention(self, cfg, index: int, dtype: ir.DataType) -> NeoXAttention:
        last = index == cfg.num_hidden_layers - 1
        return NeoXJapaneseAttention(cfg, dtype, attention_spec(cfg, index), last)


class NeoXBody(DecoderBody):
    layer_cls = NeoXLayer
    embedding_name, final_norm_name = "embed_in", "final_layer_norm"


class NeoXJapaneseBody(NeoXBody):
    layer_cls = NeoXJapaneseLayer


class NeoXLM(DecoderLM):
    """The body under `body_name` and the `embed_out` head (or the tied `embed_in` table)."""

    body_cls, body_name, head_name = NeoXBody, "gpt_neox", "embed_out"


class NeoXJapaneseLM(NeoXLM):
    body_cls, body_name = NeoXJapaneseBody, "gpt_neox_japanese"


class NeoXRopeRules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        # transformers' GPT-NeoX configs read the older rotary_pct and rotary_emb_base ahead of a
        # top-level partial_rotary_factor or rope_theta (a rope_parameters entry still wins)
        legacy = {"partial_rotary_factor": "rotary_pct", "rope_theta": "rotary_emb_base"}
        raw = dict(r.raw)
        raw.update({key: raw[old] for key, old in legacy.items() if raw.get(old) is not None})
        return parse_rope(raw, head_dim=head_dim)


class NeoXRules(NeoXRopeRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        parallel = r.bool("use_parallel_residual", default=True)
        return dataclasses.replace(super().read(r), layout="parallel" if parallel else "pre")


class NeoXJapaneseRules(NeoXRopeRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        cfg = super().read(r)
        inner = int(cfg.hidden_size * r.float("intermediate_multiple_size"))
        return dataclasses.replace(cfg, intermediate_size=inner)


_NEOX = {"norm_type": "layer", "fused_qkv": True}
# old checkpoints keep the causal-mask buffers; a tied head may still be stored
_UNUSED = (r".*\.attention\.(masked_)?bias", r"embed_out\.weight")
FAMILIES = [
    Family(
        "gpt_neox",
        NeoXLM,
        "per-head fused query_key_value, partial rotary, parallel attention+MLP with two norms",
        ("EleutherAI/pythia-160m",),
        rules=NeoXRules(**_NEOX, mlp_bias=True),
        unused=_UNUSED,
    ),
    Family(
        "gpt_neox_japanese",
        NeoXJapaneseLM,
        "GPT-NeoX, sequential, bias-free but for the last layer's attention output",
        ("abeja/gpt-neox-japanese-2.7b",),
        rules=NeoXJapaneseRules(
            **_NEOX, layout="pre", qkv_bias=False, o_bias=False, mlp_bias=False
        ),
        unused=_UNUSED,
    ),
]

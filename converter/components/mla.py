"""Multi-head latent attention (DeepSeek-V2/V3, MiniCPM3, GLM-4-MoE-Lite) in standard ops.

The cache holds the numbers transformers' does: per token the normed latent (kv_lora_rank)
and the rotated key part all heads share (qk_rope_head_dim). transformers keeps them as key
and value; here their concatenated row is split at its middle instead, so keys and values
are one width ([1, sequence, (kv_lora_rank + qk_rope_head_dim) / 2]): onnxruntime-genai 0.18
allocates every past and present with the one head_size of genai_config.json.

Attention runs in latent space: each head's query goes through its slice of kv_b_proj (W_uk)
into the latent, the heads' outputs come back through W_uv, so a step reads the cache once as
a single shared key/value head (keys: latent + rotary part, values: latent) instead of
expanding every past token for every head. The scores are transformers' up to summation order.
"""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components.attention import AttentionSpec
from converter.components.cache import LayerCache, kv_cache
from converter.components.linear import Linear, PackedLinear
from converter.components.norms import RMSNorm

# why a body of latent-attention layers sets `gqa_refused` (no GroupQueryAttention for it)
GQA_REFUSED = (
    "multi-head latent attention: its keys (latent + rotary part) and values (latent) differ "
    "in width, which GroupQueryAttention cannot take"
)


def latent_caches(cfg) -> list[LayerCache]:
    """Each layer's cache: the two halves of the row [latent, rotary key part]."""
    mla = cfg.mla
    return [replace(kv_cache(1, mla.cache_width), latent=True)] * cfg.num_hidden_layers


class LatentUpProjection(nn.Module):
    """kv_b_proj, [heads * (qk_nope + v), kv_lora_rank]: read as per-head matrices, never
    multiplied as a Linear (so the quantizing and pre-transposing passes leave it alone)."""

    def __init__(self, heads: int, nope: int, v: int, rank: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([heads * (nope + v), rank], dtype)
        self.shape, self.nope, self.v = [heads, nope + v, rank], nope, v

    def lowering_notes(self, plan) -> list[str]:
        if plan.quantization is None:
            return []
        return [
            f"{plan.quantization}: latent attention's kv_b_proj stays float "
            "(read as per-head matrices)"
        ]

    def forward(self, op):
        """W_uk [heads, nope, rank] (query into latent) and W_uv^T [heads, rank, v] (out)."""
        per_head = op.Reshape(self.weight, self.shape)
        w_uk, w_uv = op.Split(per_head, [self.nope, self.v], axis=1, _outputs=2)
        return w_uk, op.Transpose(w_uv, perm=[0, 2, 1])


class LatentAttention(nn.Module):
    """Everything from `cfg.mla` (converter.config.mla.MLA) and the layer's `spec` (heads,
    scale, rope); the kernel must be StandardAttention (see GQA_REFUSED). Takes the place of
    Attention in a DecoderLayer (`attention_cls`), with the same call."""

    def __init__(self, cfg, dtype: ir.DataType, spec: AttentionSpec, packed: bool = False):
        super().__init__()
        mla, hidden, heads = cfg.mla, cfg.hidden_size, spec.heads
        self.mla, self.spec = mla, spec
        latent = mla.kv_lora_rank + mla.qk_rope_head_dim
        q_size = heads * mla.qk_head_dim
        if mla.q_lora_rank is None:
            self.q_proj = Linear(hidden, q_size, False, dtype)
            self.kv_a_proj_with_mqa = Linear(hidden, latent, cfg.qkv_bias, dtype)
        else:
            parts = [("q_a_proj", mla.q_lora_rank), ("kv_a_proj_with_mqa", latent)]
            self.down = PackedLinear(parts, hidden, cfg.qkv_bias, dtype, packed)
            self.q_a_layernorm = RMSNorm(mla.q_lora_rank, mla.latent_norm_eps, dtype)
            self.q_b_proj = Linear(mla.q_lora_rank, q_size, False, dtype)
        self.kv_a_layernorm = RMSNorm(mla.kv_lora_rank, mla.latent_norm_eps, dtype)
        self.kv_b_proj = LatentUpProjection(
            heads, mla.qk_nope_head_dim, mla.v_head_dim, mla.kv_lora_rank, dtype
        )
        self.o_proj = Linear(heads * mla.v_head_dim, hidden, cfg.o_bias, dtype)

    def _project(self, op, x):
        """q [batch, seq, heads * qk_head_dim] and the compressed kv [batch, seq, latent]."""
        if self.mla.q_lora_rank is None:
            return self.q_proj(op, x), self.kv_a_proj_with_mqa(op, x)
        q_a, compressed = self.down(op, x)
        return self.q_b_proj(op, self.q_a_layernorm(op, q_a)), compressed

    def _rotate(self, op, kernel, x, heads: int):
        """x [batch, seq, heads * qk_rope_head_dim] rotated in the MLA's pair layout."""
        dim = self.mla.qk_rope_head_dim
        if self.mla.deinterleave:
            pairs = op.Reshape(x, [0, 0, heads, dim // 2, 2])
            x = op.Reshape(op.Transpose(pairs, perm=[0, 1, 2, 4, 3]), [0, 0, heads * dim])
        return x if self.spec.rope is None else kernel.rotate(op, x, heads, self.spec.rope)

    def forward(self, op, x, kernel, past_key, past_value):
        mla, heads = self.mla, self.spec.heads
        nope, rope_dim, rank = mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.kv_lora_rank
        q, compressed = self._project(op, x)
        q = op.Reshape(q, [0, 0, heads, mla.qk_head_dim])
        q_nope, q_pe = op.Split(q, [nope, rope_dim], axis=-1, _outputs=2)
        latent, k_pe = op.Split(compressed, [rank, rope_dim], axis=-1, _outputs=2)
        latent = self.kv_a_layernorm(op, latent)
        q_pe = self._rotate(op, kernel, op.Reshape(q_pe, [0, 0, heads * rope_dim]), heads)
        k_pe = self._rotate(op, kernel, k_pe, 1)

        w_uk, w_uv_t = self.kv_b_proj(op)
        heads_first = [0, 2, 1, 3]
        q_latent = op.MatMul(op.Transpose(q_nope, perm=heads_first), w_uk)
        q_pe = op.Transpose(op.Reshape(q_pe, [0, 0, heads, rope_dim]), perm=heads_first)
        query = op.Concat(q_latent, q_pe, axis=-1)  # [batch, heads, seq, rank + rope]

        row = op.Unsqueeze(op.Concat(latent, k_pe, axis=-1), [1])  # [batch, 1, seq, width]
        width = mla.cache_width
        new_key, new_value = op.Split(row, [width, width], axis=-1, _outputs=2)
        present_key = op.Concat(past_key, new_key, axis=2)
        present_value = op.Concat(past_value, new_value, axis=2)
        keys = op.Concat(present_key, present_value, axis=-1)  # every token's row
        values = op.Slice(keys, [0], [rank], [-1])  # its latent
        y = kernel.attend(op, query, keys, values, self.spec)  # [batch, heads, seq, rank]
        y = op.Transpose(op.MatMul(y, w_uv_t), perm=heads_first)
        y = op.Reshape(y, [0, 0, heads * mla.v_head_dim])
        return self.o_proj(op, y), present_key, present_value

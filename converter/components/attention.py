"""Self-attention over the standard opset-23 `Attention` op (MHA and GQA, KV cache)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.linear import Linear
from converter.components.norms import make_norm


class Attention(nn.Module):
    """q/k/v projections (or one fused `qkv_proj`), optional q/k norms, rotary, output."""

    out_proj_name = "o_proj"
    qk_norm_names = ("q_norm", "k_norm")

    def __init__(self, cfg, dtype: ir.DataType, rope_dim: int):
        super().__init__()
        hidden, d = cfg.hidden_size, cfg.head_dim
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = d
        q_size, kv_size = self.heads * d, self.kv_heads * d
        self.fused = cfg.fused_qkv
        if self.fused:
            self.qkv_proj = Linear(hidden, q_size + 2 * kv_size, cfg.qkv_bias, dtype)
        else:
            self.q_proj = Linear(hidden, q_size, cfg.qkv_bias, dtype)
            self.k_proj = Linear(hidden, kv_size, cfg.qkv_bias, dtype)
            self.v_proj = Linear(hidden, kv_size, cfg.qkv_bias, dtype)
        setattr(self, self.out_proj_name, Linear(q_size, hidden, cfg.o_bias, dtype))
        self.qk_norm = cfg.qk_norm
        if cfg.qk_norm is not None:
            whole = cfg.qk_norm == "full"
            q_name, k_name = self.qk_norm_names
            setattr(self, q_name, make_norm(cfg, q_size if whole else d, dtype))
            setattr(self, k_name, make_norm(cfg, kv_size if whole else d, dtype))
        self.rope_dim = rope_dim
        self.scale = cfg.attention_scale
        self.softcap = cfg.attn_logit_softcap or 0.0

    def _project(self, op, x):
        if self.fused:
            d = self.head_dim
            sizes = [self.heads * d, self.kv_heads * d, self.kv_heads * d]
            return op.Split(self.qkv_proj(op, x), sizes, axis=-1, _outputs=3)
        return self.q_proj(op, x), self.k_proj(op, x), self.v_proj(op, x)

    def _norm(self, op, norm, x):
        if self.qk_norm == "full":
            return norm(op, x)
        per_head = norm(op, op.Reshape(x, [0, 0, -1, self.head_dim]))
        return op.Reshape(per_head, [0, 0, -1])

    def _rotate(self, op, x, heads, cos, sin):
        if cos is None:
            return x
        return op.RotaryEmbedding(
            x, cos, sin, interleaved=0, num_heads=heads, rotary_embedding_dim=self.rope_dim
        )

    def forward(self, op, x, cos, sin, mask, past_key, past_value):
        q, k, v = self._project(op, x)
        if self.qk_norm is not None:
            q_name, k_name = self.qk_norm_names
            q = self._norm(op, getattr(self, q_name), q)
            k = self._norm(op, getattr(self, k_name), k)
        q = self._rotate(op, q, self.heads, cos, sin)
        k = self._rotate(op, k, self.kv_heads, cos, sin)
        y, present_key, present_value = attend(
            op,
            q,
            k,
            v,
            mask,
            past_key,
            past_value,
            self.heads,
            self.kv_heads,
            self.scale,
            self.softcap,
        )
        return getattr(self, self.out_proj_name)(op, y), present_key, present_value


def attend(op, q, k, v, mask, past_key, past_value, heads, kv_heads, scale, softcap=0.0):
    """Attention over [batch, seq, heads * head_dim] inputs; returns output and present k/v."""
    return op.Attention(
        q,
        k,
        v,
        mask,
        past_key,
        past_value,
        q_num_heads=heads,
        kv_num_heads=kv_heads,
        scale=scale,
        softcap=softcap,
        _outputs=3,
    )

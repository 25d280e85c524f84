"""The standard kernel over a static cache: fixed-size key/value caches of max_seq_len slots,
written in place by opset-24 TensorScatter at each row's write index, read whole by opset-24
Attention under a mask of the write positions (and sliding windows), with nonpad_kv_seqlen
bounding each row's valid slots so a kernel may skip the rest."""

from __future__ import annotations

from converter.components.attention import AttentionSpec, Rotary
from converter.components.masks import static_masks


class StaticAttention:
    """The StandardAttention contract (q, k, v [batch, sequence, heads x dim] in; the output
    and the updated caches out) over caches [batch, kv_heads, max_seq_len, dim]; `static` is
    the graph's StaticCacheInputs."""

    def __init__(self, op, dtype, tokens, position_ids, static, windows):
        self.static, self.position_ids = static, position_ids
        self.masks = static_masks(
            op, static.write_indices, tokens, static.max_seq_len, windows, dtype
        )
        self.rotate = Rotary(dtype, position_ids)

    def __call__(self, op, q, k, v, past_key, past_value, spec: AttentionSpec, sinks=None):
        if spec.rope is not None:
            q = self.rotate(op, q, spec.heads, spec.rope)
            k = self.rotate(op, k, spec.kv_heads, spec.rope)

        def heads_first(x, heads):  # [batch, heads, sequence, dim]
            return op.Transpose(op.Reshape(x, [0, 0, heads, -1]), perm=[0, 2, 1, 3])

        write = self.static.write_indices
        key = op.TensorScatter(past_key, heads_first(k, spec.kv_heads), write, axis=2)
        value = op.TensorScatter(past_value, heads_first(v, spec.kv_heads), write, axis=2)
        y = op.Attention(
            heads_first(q, spec.heads),
            key,
            value,
            self.masks[spec.window],
            None,  # past_key: the caches above already hold the past
            None,  # past_value
            self.static.nonpad_kv_seqlen,
            scale=spec.scale,
            softcap=spec.softcap,
        )
        return op.Reshape(op.Transpose(y, perm=[0, 2, 1, 3]), [0, 0, -1]), key, value

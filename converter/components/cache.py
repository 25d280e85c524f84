"""What a layer keeps between decoding steps, declared by the model and read by everything
downstream (the task's graph inputs and outputs, genai_config, the runtime, lowering)."""

from __future__ import annotations

from dataclasses import dataclass

KV, SLIDING_KV, CROSS, CONV, SSM = "kv", "sliding_kv", "cross", "conv", "ssm"
KINDS = (KV, SLIDING_KV, CROSS, CONV, SSM)


@dataclass(frozen=True)
class LayerCache:
    """One layer's cache. `key` and `value` are the per-sequence shapes after the batch dim,
    with "sequence" where the cache grows (K and V may differ, as in DeepSeek's MLA); `window`
    is the sliding window of a `sliding_kv` cache; `latent`: the rows are a compressed latent
    every head reads through its own up-projection (MLA), not per-head keys and values."""

    kind: str
    key: tuple[int | str, ...]
    value: tuple[int | str, ...]
    window: int | None = None
    latent: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"cache kind must be one of {', '.join(KINDS)}, not {self.kind!r}")

    @property
    def attends(self) -> bool:
        """A key/value cache an attention kernel reads (not a recurrent state)."""
        return self.kind in (KV, SLIDING_KV, CROSS)


def kv_cache(kv_heads: int, head_dim: int, window: int | None = None, v_dim: int | None = None):
    """The usual self-attention cache: [kv_heads, sequence, head_dim] for K and V."""
    return LayerCache(
        SLIDING_KV if window else KV,
        (kv_heads, "sequence", head_dim),
        (kv_heads, "sequence", v_dim or head_dim),
        window,
    )

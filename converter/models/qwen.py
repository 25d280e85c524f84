"""Qwen2 and Qwen3: Llama with q/k/v biases (Qwen2) or per-head q/k norms (Qwen3), and
sliding windows only when `use_sliding_window` says so, from layer `max_window_layers` on."""

from converter.config import FULL, SLIDING, ConfigReader, ConfigRules
from converter.models.decoder import DecoderLM
from converter.registry import Family


class QwenRules(ConfigRules):
    def sliding_window(self, r: ConfigReader) -> int | None:
        return r.raw.get("sliding_window") if r.bool("use_sliding_window", False) else None

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        if window is None:
            return FULL
        return SLIDING if index >= r.int("max_window_layers", default=0, lo=0) else FULL


FAMILIES = [
    Family(
        "qwen2",
        DecoderLM,
        "q/k/v biases",
        ("Qwen/Qwen2.5-0.5B-Instruct",),
        rules=QwenRules(qkv_bias=True, o_bias=False),
    ),
    Family(
        "qwen3",
        DecoderLM,
        "per-head q/k RMSNorm",
        ("Qwen/Qwen3-0.6B",),
        rules=QwenRules(qk_norm="head"),
    ),
]

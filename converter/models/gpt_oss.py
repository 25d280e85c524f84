"""GPT-OSS: a decoder whose attention has q/k/v/o biases and a learned sink per head, sliding
and full layers alternating, and experts in every layer: a biased router's top-k logits,
softmaxed over the picks, and experts with biases and a clamped SwiGLU
(gate * sigmoid(alpha * gate) * (up + 1), gate at most `swiglu_limit`, up within it).

transformers saves the experts fused (`gate_up_proj` [E, H, 2I], gate and up alternating on
the last axis; `down_proj` [E, I, H]); Hub checkpoints ship them in MXFP4 (`*_blocks`,
`*_scales`), dequantized here while the package is written.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from converter.components.experts import transposed
from converter.components.moe import SparseMoe
from converter.config import FULL, SLIDING, ArchitectureConfig, ConfigReader
from converter.config.moe import MoeConfig, MoeRules
from converter.errors import WeightsError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family
from converter.weights import Assembly

# E2M1: the sign bit, then the code of 0, 0.5, 1, 1.5, 2, 3, 4, 6
FP4_VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
    np.float32,
)
MXFP4_BLOCK = 32  # values sharing one exponent
_SCALE_BIAS = 127  # the scales are E8M0 exponents


def dequantize_mxfp4(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """[..., N, K/32, 16] packed codes (value 2j in the low nibble of byte j, 2j+1 in the high
    one) and [..., N, K/32] exponents -> [..., N, K] bfloat16 (exact: an E2M1 value times a
    power of two)."""
    low, high = FP4_VALUES[blocks & 0x0F], FP4_VALUES[blocks >> 4]
    values = np.stack([low, high], axis=-1).reshape(*scales.shape, MXFP4_BLOCK)
    exponents = scales.astype(np.int32)[..., None] - _SCALE_BIAS
    values = np.ldexp(values, exponents).astype(ml_dtypes.bfloat16)
    return values.reshape(*scales.shape[:-1], -1)


class FusedGateUp:
    """`{prefix}.gate_up_proj` [E, in, 2 out] (gate and up alternating on the last axis) and
    `{prefix}.down_proj` [E, in, out], with their `_bias` tensors: what transformers saves."""

    def weight(self, prefix: str, part: str, shape: tuple[int, int, int]) -> Assembly:
        experts, out, inner = shape
        if part == "down":
            return Assembly(((f"{prefix}.down_proj", (experts, inner, out)),), self._down)
        parity = 0 if part == "gate" else 1
        fused = ((f"{prefix}.gate_up_proj", (experts, inner, 2 * out)),)
        return Assembly(fused, lambda arrays: transposed(arrays[0][..., parity::2]))

    @staticmethod
    def _down(arrays):
        return transposed(arrays[0])

    def bias(self, prefix: str, part: str, shape: tuple[int, int]) -> Assembly:
        experts, out = shape
        if part == "down":
            return Assembly(((f"{prefix}.down_proj_bias", shape),), lambda arrays: arrays[0])
        parity = 0 if part == "gate" else 1
        fused = ((f"{prefix}.gate_up_proj_bias", (experts, 2 * out)),)
        return Assembly(fused, lambda arrays: np.ascontiguousarray(arrays[0][:, parity::2]))


class Mxfp4GateUp(FusedGateUp):
    """The same experts as MXFP4 `{name}_blocks` [E, out, in / 32, 16] and `{name}_scales`
    [E, out, in / 32] (uint8), already [E, out, in]; the biases stay floating point."""

    def weight(self, prefix: str, part: str, shape: tuple[int, int, int]) -> Assembly:
        experts, out, inner = shape
        if inner % MXFP4_BLOCK:
            raise WeightsError(
                f"{prefix}: MXFP4 experts need an input width divisible by {MXFP4_BLOCK}, "
                f"got {inner}"
            )
        name, rows = ("down_proj", out) if part == "down" else ("gate_up_proj", 2 * out)
        groups = inner // MXFP4_BLOCK
        parts = (
            (f"{prefix}.{name}_blocks", (experts, rows, groups, MXFP4_BLOCK // 2)),
            (f"{prefix}.{name}_scales", (experts, rows, groups)),
        )
        if part == "down":
            return Assembly(parts, lambda arrays: dequantize_mxfp4(*arrays), frozenset({"U8"}))
        parity = 0 if part == "gate" else 1

        def rows_of_part(arrays):
            return np.ascontiguousarray(dequantize_mxfp4(*arrays)[:, parity::2])

        return Assembly(parts, rows_of_part, frozenset({"U8"}))


@dataclasses.dataclass(frozen=True)
class GptOssConfig(ArchitectureConfig):
    mxfp4: bool = False  # experts stored as MXFP4 blocks and scales


class GptOssMoe(SparseMoe):
    router_name = "router"
    layout = FusedGateUp()


class GptOssMxfp4Moe(GptOssMoe):
    layout = Mxfp4GateUp()


class GptOssLayer(DecoderLayer):
    def make_mlp(self, cfg: GptOssConfig, index: int, dtype, ep):
        return (GptOssMxfp4Moe if cfg.mxfp4 else GptOssMoe)(cfg, dtype, ep)


class GptOssBody(DecoderBody):
    layer_cls = GptOssLayer


class GptOssLM(DecoderLM):
    body_cls = GptOssBody


class GptOssRules(MoeRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return SLIDING if index % 2 == 0 else FULL  # transformers' default `layer_types`

    def moe(self, r: ConfigReader, cfg: ArchitectureConfig) -> MoeConfig:
        return dataclasses.replace(
            super().moe(r, cfg),
            router_bias=True,
            expert_bias=True,
            swiglu_alpha=r.float("swiglu_alpha", default=1.702),
            swiglu_beta=1.0,
            swiglu_limit=r.float("swiglu_limit", default=7.0),
        )

    def read(self, r: ConfigReader) -> GptOssConfig:
        quantization = r.section("quantization_config")
        mxfp4 = bool(quantization.raw)
        if mxfp4 and quantization.raw.get("quant_method") != "mxfp4":
            quantization.refuse("quant_method", "GPT-OSS experts are read as bf16/f32 or MXFP4")
        cfg = dataclasses.replace(super().read(r), attention_sinks=True)
        return GptOssConfig(**vars(cfg), mxfp4=mxfp4)


FAMILIES = [
    Family(
        "gpt_oss",
        GptOssLM,
        "attention sinks, alternating sliding windows, biased router and experts with a "
        "clamped SwiGLU; MXFP4 experts dequantized",
        ("openai/gpt-oss-20b",),
        rules=GptOssRules(normalize=True, expert_size_keys=("intermediate_size",)),
        category="moe",
        genai="gptoss",
    ),
]

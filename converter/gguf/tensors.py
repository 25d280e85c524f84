"""A GGUF file's tensors as a checkpoint under Hugging Face names, read when written.

Each tensor is undone to its Hugging Face values: llama.cpp's rope row order for Llama's q/k
projections reversed, Gemma's norm weights (stored as 1 + w) shifted back, quant types
dequantized to float32. A Q4_0 tensor also offers its blocks as they are (`packed`): 32 codes with
one f16 scale and zero point 8 are exactly a MatMulNBits block, so an int4 build uses them
without requantizing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from converter.config.olive import Projection
from converter.errors import WeightsError
from converter.gguf.config import GEMMA, ROPE_FACTORS, ROPE_FREQS
from converter.gguf.reader import GgufFile, GgufTensor
from converter.quantize import BlockWeight, from_codes
from converter.weights import Checkpoint, Packed

FLOAT_TYPES = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}
# the types gguf's own dequantizer reads
QUANT_TYPES = (
    *("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"),
    *("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_NL", "IQ4_XS"),
    *("TQ1_0", "TQ2_0", "MXFP4", "NVFP4"),
)
Q4_0_BLOCK = 32

_GLOBAL = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_LAYER = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_qkv": "self_attn.qkv_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
# Gemma 2/3 norm both sides of attention and of the MLP
_SANDWICH = {
    "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm",
}
_BLOCK = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")


@dataclass(frozen=True)
class GgufTensorRef:
    """A checkpoint entry (the interface weights.bind reads): `load()` gives the Hugging Face
    values in `dtype`; `packed`, where not None, the same values as MatMulNBits blocks."""

    name: str  # the GGUF tensor's own name, for errors
    dtype: str
    shape: tuple[int, ...]
    load: Callable[[], np.ndarray]
    packed: Packed | None = None


def gguf_checkpoint(gguf: GgufFile, config: dict) -> Checkpoint:
    """`gguf`'s tensors under Hugging Face names (`config`: its hf_config)."""
    arch, refs = gguf.architecture, {}
    for name, tensor in gguf.tensors.items():
        if name in (*ROPE_FACTORS, ROPE_FREQS):  # read into the config's rope scaling
            continue
        target = hf_name(name, arch)
        if target is None:
            raise WeightsError(f"GGUF tensor '{name}' is not one build-gguf maps for {arch}")
        refs[target] = _ref(tensor, _row_order(target, arch, config), _shift(target, arch))
    return Checkpoint.of(gguf.path.parent, refs)


def hf_name(name: str, arch: str) -> str | None:
    if name in _GLOBAL:
        return _GLOBAL[name]
    match = _BLOCK.fullmatch(name)
    if match is None:
        return None
    layer, part, kind = match.groups()
    if arch in ("gemma2", "gemma3") and part in _SANDWICH:
        module = _SANDWICH[part]
    elif arch == "phi3" and part == "ffn_up":  # Phi-3 keeps gate and up rows in one tensor
        module = "mlp.gate_up_proj"
    else:
        module = _LAYER.get(part)
    return None if module is None else f"model.layers.{layer}.{module}.{kind}"


def _row_order(target: str, arch: str, config: dict) -> np.ndarray | None:
    """llama.cpp stores Llama's q/k rows of each head with the two rotary halves interleaved
    (its rope pairs neighbours); the index that puts them back in halves, or None."""
    if arch != "llama" or not re.search(r"\.self_attn\.[qk]_proj\.", target):
        return None
    heads = config["num_attention_heads" if ".q_proj." in target else "num_key_value_heads"]
    half = config["head_dim"] // 2
    return np.arange(heads * 2 * half).reshape(heads, half, 2).swapaxes(1, 2).reshape(-1)


def _shift(target: str, arch: str) -> float:
    """llama.cpp stores Gemma's norm weights as 1 + w (its RMSNorm multiplies by the weight)."""
    return 1.0 if arch in GEMMA and target.endswith("norm.weight") else 0.0


def _ref(tensor: GgufTensor, rows: np.ndarray | None, shift: float) -> GgufTensorRef:
    kind, shape = tensor.type, tensor.shape
    if rows is not None and len(rows) != shape[0]:
        raise WeightsError(
            f"tensor '{tensor.name}' has {shape[0]} rows, the heads need {len(rows)}"
        )
    if kind in FLOAT_TYPES:
        dtype = kind
        raw = tensor.data.view(FLOAT_TYPES[kind]).reshape(shape)
        values = (lambda: raw) if rows is None else (lambda: raw[rows])
    elif kind in QUANT_TYPES:
        dtype, values = "F32", lambda: _dequantized(tensor)[rows if rows is not None else ...]
    else:
        raise WeightsError(
            f"tensor '{tensor.name}' is {kind}, a GGUF type build-gguf does not read (it reads "
            f"{', '.join((*FLOAT_TYPES, *QUANT_TYPES))})"
        )
    if shift:
        dtype, load = "F32", lambda: values().astype(np.float32) - np.float32(shift)
    else:
        load = values
    packed = _q4_blocks(tensor, rows) if kind == "Q4_0" and len(shape) == 2 else None
    return GgufTensorRef(tensor.name, dtype, shape, load, packed)


def _dequantized(tensor: GgufTensor) -> np.ndarray:
    from gguf import GGMLQuantizationType, dequantize

    values = dequantize(np.asarray(tensor.data), GGMLQuantizationType[tensor.type])
    return values.reshape(tensor.shape)


def _q4_blocks(tensor: GgufTensor, rows: np.ndarray | None) -> Packed:
    """A Q4_0 block is an f16 scale d and 16 bytes of codes q (value = d * (q - 8)), code j in
    the low nibble of byte j and code j + 16 in its high nibble."""
    n, k = tensor.shape

    def q4() -> BlockWeight:
        blocks = np.asarray(tensor.data).reshape(n, k // Q4_0_BLOCK, 18)
        if rows is not None:
            blocks = blocks[rows]
        scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16)[..., 0]
        packed = blocks[..., 2:]
        codes = np.concatenate((packed & 0x0F, packed >> 4), axis=-1)
        return from_codes(codes, scales.astype(np.float32), k)

    return Packed(Projection(bits=4, symmetric=True, block_size=Q4_0_BLOCK), q4)

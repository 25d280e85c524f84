"""GGUF files made from tiny transformers checkpoints the way llama.cpp's converter makes them
(its tensor names from gguf's own name map, q/k rows permuted for Llama, Gemma norms stored as
1 + w), with 2-D weights in a chosen ggml type."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import torch

from tests.gguf_tokenizers import add_fields

ARCHS = {  # transformers model_type -> GGUF architecture
    "llama": gguf.MODEL_ARCH.LLAMA,
    "mistral": gguf.MODEL_ARCH.LLAMA,
    "qwen2": gguf.MODEL_ARCH.QWEN2,
    "qwen3": gguf.MODEL_ARCH.QWEN3,
    "gemma": gguf.MODEL_ARCH.GEMMA,
    "gemma2": gguf.MODEL_ARCH.GEMMA2,
    "gemma3_text": gguf.MODEL_ARCH.GEMMA3,
    "phi3": gguf.MODEL_ARCH.PHI3,
}
Q = gguf.GGMLQuantizationType


def write_gguf(
    model, path: Path, qtype: Q = Q.F32, tokenizer: dict | None = None
) -> dict[str, torch.Tensor]:
    """Write `model` (a transformers causal LM) to `path`; its 2-D weights as `qtype`, the rest
    F32; `tokenizer`: tokenizer.* fields to write too (tests/gguf_tokenizers.py makes them).
    Returns the Hugging Face weights the file holds after quantization (for a quantized type,
    each 2-D weight dequantized), to load into the reference model."""
    cfg = model.config
    arch = ARCHS[cfg.model_type]
    writer = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[arch])
    _metadata(writer, model, arch)
    add_fields(writer, tokenizer or {})
    names = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    state = {k: v for k, v in model.state_dict().items() if "rotary_emb" not in k}
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    held = {}
    for name, tensor in state.items():
        array = tensor.detach().float().numpy()
        stored = _llama_cpp_layout(name, array, cfg, arch)
        gguf_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert gguf_name is not None, name
        kind = qtype if array.ndim == 2 else Q.F32
        data = quantize(stored, kind)
        writer.add_tensor(gguf_name, data, raw_dtype=kind if data.dtype == np.uint8 else None)
        # quantization is row by row: dequantizing the Hugging Face rows gives the same values
        held[name] = torch.from_numpy(dequantize(quantize(array, kind), kind, array.shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return held


def quantize(array: np.ndarray, kind: Q) -> np.ndarray:
    if kind == Q.Q4_K:
        return quantize_q4_k(array)
    if kind == Q.IQ4_NL:  # gguf has no quantizer: Q4_0's layout (an f16 scale, 32 nibbles)
        blocks = quantize(array, Q.Q4_0).reshape(-1, 18).copy()
        # each nibble picks one of 16 non-linear levels, about 16 Q4_0 steps apart at most
        blocks[:, :2] = (blocks[:, :2].view(np.float16) / 16).view(np.uint8)
        return blocks.reshape(*array.shape[:-1], -1)
    return gguf.quants.quantize(array.astype(np.float32), kind)


def dequantize(data: np.ndarray, kind: Q, shape) -> np.ndarray:
    return gguf.quants.dequantize(data, kind).reshape(shape).astype(np.float32)


def _metadata(w: gguf.GGUFWriter, model, arch) -> None:
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    w.add_vocab_size(cfg.vocab_size)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    rope = cfg.rope_parameters
    rope = rope.get("full_attention", rope)  # Gemma 3 nests them per layer type
    w.add_rope_freq_base(rope["rope_theta"])
    w.add_rope_dimension_count(int(head_dim * rope.get("partial_rotary_factor", 1.0)))
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    if cfg.pad_token_id is not None:
        w.add_pad_token_id(cfg.pad_token_id)
    if rope.get("rope_type") == "linear":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rope["factor"])
    if rope.get("rope_type") == "llama3":  # llama.cpp stores each frequency's divisor
        w.add_tensor("rope_freqs.weight", _rope_divisors(model))
    if rope.get("rope_type") == "longrope":  # Phi-3: its factors as tensors, as llama.cpp does
        original = getattr(cfg, "original_max_position_embeddings", None)
        w.add_rope_scaling_orig_ctx_len(original or rope["original_max_position_embeddings"])
        for kind in ("long", "short"):
            factors = np.array(rope[f"{kind}_factor"], np.float32)
            w.add_tensor(f"rope_factors_{kind}.weight", factors)
    if arch in (gguf.MODEL_ARCH.GEMMA2, gguf.MODEL_ARCH.GEMMA3):
        w.add_sliding_window(cfg.sliding_window)
        w.add_sliding_window_pattern([t == "sliding_attention" for t in cfg.layer_types])
    if arch == gguf.MODEL_ARCH.GEMMA2:
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
    if arch == gguf.MODEL_ARCH.GEMMA3:
        w.add_rope_freq_base_swa(cfg.rope_parameters["sliding_attention"]["rope_theta"])


def _rope_divisors(model) -> np.ndarray:
    """The unscaled rotary frequencies over the model's own (scaled) ones."""
    scaled = model.model.rotary_emb.inv_freq.double().numpy()
    dim = 2 * len(scaled)
    theta = model.config.rope_parameters["rope_theta"]
    unscaled = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float32) / dim).astype(np.float64)
    return (unscaled / scaled).astype(np.float32)


def _llama_cpp_layout(name: str, array: np.ndarray, cfg, arch) -> np.ndarray:
    if arch == gguf.MODEL_ARCH.LLAMA and (".q_proj." in name or ".k_proj." in name):
        heads = cfg.num_attention_heads if ".q_proj." in name else cfg.num_key_value_heads
        return (
            array.reshape(heads, 2, array.shape[0] // heads // 2, *array.shape[1:])
            .swapaxes(1, 2)
            .reshape(array.shape)
        )
    gemma = (gguf.MODEL_ARCH.GEMMA, gguf.MODEL_ARCH.GEMMA2, gguf.MODEL_ARCH.GEMMA3)
    if arch in gemma and name.endswith("norm.weight"):
        return array + 1
    return array


def quantize_q4_k(array: np.ndarray) -> np.ndarray:
    """Q4_K blocks (gguf-py dequantizes them but has no quantizer): per 256 values an f16 scale
    d and min dmin, eight 6-bit sub-block scales and mins, 4-bit codes; value = d * sc * q -
    dmin * m."""
    rows = array.reshape(-1, 8, 32).astype(np.float32)  # [superblocks, sub-blocks, 32]
    low = np.minimum(rows.min(-1), 0)
    scale = (rows.max(-1) - low) / 15
    d = (scale.max(-1, keepdims=True) / 63).astype(np.float16).astype(np.float32)
    dmin = (-low.min(-1, keepdims=True) / 63).astype(np.float16).astype(np.float32)
    sc = np.clip(np.rint(np.divide(scale, d, out=np.zeros_like(scale), where=d > 0)), 0, 63)
    m = np.clip(np.rint(np.divide(-low, dmin, out=np.zeros_like(low), where=dmin > 0)), 0, 63)
    step = (d * sc)[..., None]
    q = np.divide(rows + (dmin * m)[..., None], step, out=np.zeros_like(rows), where=step > 0)
    q = np.clip(np.rint(q), 0, 15).astype(np.uint8)
    sc, m = sc.astype(np.uint8), m.astype(np.uint8)
    packed_scales = np.concatenate(
        [
            (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6),
            (m[:, :4] & 63) | ((m[:, 4:] >> 4) << 6),
            (sc[:, 4:] & 15) | ((m[:, 4:] & 15) << 4),
        ],
        axis=-1,
    )
    codes = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(-1, 128)
    blocks = np.concatenate(
        [
            d.astype(np.float16).view(np.uint8),
            dmin.astype(np.float16).view(np.uint8),
            packed_scales,
            codes,
        ],
        axis=-1,
    )
    return blocks.reshape(*array.shape[:-1], array.shape[-1] // 256 * 144)

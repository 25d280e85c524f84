"""transformers with every int4- or int8-quantized weight replaced by its dequantized value.

The int4 and int8 graphs must reproduce this model up to activation rounding: that checks packing,
layouts (Linear and Conv1D), packed projections and both int4 kernels, on any weights.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from transformers.pytorch_utils import Conv1D

from converter.quantize import quantize_blocks
from converter.quantize_int8 import quantize_q8

# LM heads that transformers' get_output_embeddings does not return (FSMT's returns the
# decoder's token table; its logits come from the decoder's output_projection)
HEADS = ("model.decoder.output_projection",)


def dequantized_copy(model, block_size: int = 32, symmetric: bool = True, head_bits=8):
    """Every Linear and Conv1D weight in int4 blocks; the token embedding and the LM head in
    blocks of `head_bits` (8: blocks of 128, as int4 builds quantize them by default; 4: of
    `block_size`; None: left float). Position tables are never quantized, nor latent
    attention's kv_b_proj, which the graph reads as per-head matrices (components/mla.py), nor
    Switch Transformers' routers, which it keeps float."""

    def int4(weight: np.ndarray) -> np.ndarray:
        return quantize_blocks(weight, block_size, symmetric).dequantize()

    def table(weight: np.ndarray) -> np.ndarray:
        block = 128 if head_bits == 8 else block_size
        return quantize_blocks(weight, block, symmetric, head_bits).dequantize()

    return _replaced(model, int4, table if head_bits else None)


def int8_dequantized_copy(model):
    """Every Linear and Conv1D weight but the LM head's, per-channel int8 (what int8 builds
    quantize); embeddings, position tables and latent attention's kv_b_proj stay float."""
    return _replaced(model, lambda weight: quantize_q8(weight).dequantize(), None)


def _replaced(model, dequantized, table):
    """A copy of `model` with each Linear weight [N, K] replaced by `dequantized(weight)`, the
    token embedding and the LM head by `table(weight)` (None: left float)."""
    copied = copy.deepcopy(model)
    tables_of = {copied.get_input_embeddings(), copied.get_output_embeddings()}
    done: set[int] = set()  # a tied head shares the embedding's weight
    with torch.no_grad():
        for name, module in copied.named_modules():
            if name.endswith(("kv_b_proj", "router.classifier")):  # (Switch's router stays float)
                continue
            quantize = dequantized if isinstance(module, torch.nn.Linear | Conv1D) else None
            if module in tables_of or name in HEADS:
                quantize = table
            if quantize is None or id(module.weight) in done:
                continue
            done.add(id(module.weight))
            conv1d = isinstance(module, Conv1D)  # stored [K, N]
            weight = module.weight.numpy()
            weight = weight.T if conv1d else weight  # [N, K]
            values = quantize(np.ascontiguousarray(weight))
            module.weight.copy_(torch.from_numpy(values.T.copy() if conv1d else values))
    return copied

"""transformers with every int4- or int8-quantized weight replaced by its dequantized value.

The int4 and int8 graphs must reproduce this model up to activation rounding: that checks packing,
layouts (Linear and Conv1D), packed projections and both int4 kernels, on any weights.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from transformers.pytorch_utils import Conv1D

from converter.lowering.int4 import Int4
from converter.quantize import DEFAULT_METHOD, quantize_blocks
from converter.quantize_int8 import quantize_q8

# LM heads that transformers' get_output_embeddings does not return (FSMT's returns the
# decoder's token table; its logits come from the decoder's output_projection)
HEADS = ("model.decoder.output_projection",)


def dequantized_copy(
    model,
    block_size: int = 32,
    symmetric: bool = True,
    head_bits=8,
    embedding: bool = True,
    method: str = DEFAULT_METHOD,
):
    """Every Linear and Conv1D weight in int4 blocks; the LM head and, with `embedding` (EPs
    that gather quantized rows), the token embedding at `head_bits` (None: left float), as
    int4 builds quantize them (in `Int4.head_block_size` blocks); a head tied to a float
    embedding gets a quantized copy. Position tables are never quantized, nor latent
    attention's kv_b_proj, which the graph reads as per-head matrices (components/mla.py), nor
    Switch Transformers' routers, which it keeps float. `method` picks the block scales
    (converter/quantize.py), as the build's int4 method."""

    def int4(weight: np.ndarray) -> np.ndarray:
        return quantize_blocks(weight, block_size, symmetric, 4, method).dequantize()

    def head(weight: np.ndarray) -> np.ndarray:
        block = Int4(block_size, symmetric, head_bits).head_block_size
        return quantize_blocks(weight, block, symmetric, head_bits, method).dequantize()

    tables = (head, head if embedding else None) if head_bits else (None, None)
    return _replaced(model, int4, *tables)


def int8_dequantized_copy(model):
    """Every Linear and Conv1D weight but the LM head's, per-channel int8 (what int8 builds
    quantize); embeddings, position tables and latent attention's kv_b_proj stay float."""
    return _replaced(model, lambda weight: quantize_q8(weight).dequantize(), None, None)


def _replaced(model, dequantized, head, rows):
    """A copy of `model` with each Linear weight [N, K] replaced by `dequantized(weight)`, the
    LM head's by `head(weight)` and the token embedding's by `rows(weight)` (None: left float;
    a head tied to the embedding is `head`'s, untied from a float embedding)."""
    copied = copy.deepcopy(model)
    tokens, output = copied.get_input_embeddings(), copied.get_output_embeddings()
    tied = output is not None and output.weight is tokens.weight
    if tied and head is not None and rows is None:
        output.weight = torch.nn.Parameter(output.weight.detach().clone())
    done: set[int] = set()  # weights several modules share
    with torch.no_grad():
        for name, module in copied.named_modules():
            if name.endswith(("kv_b_proj", "router.classifier")):  # (Switch's router stays float)
                continue
            quantize = dequantized if isinstance(module, torch.nn.Linear | Conv1D) else None
            if module is output or name in HEADS:
                quantize = head
            elif module is tokens:
                quantize = None if tied and rows is not None else rows  # a tied one: the head's
            if quantize is None or id(module.weight) in done:
                continue
            done.add(id(module.weight))
            conv1d = isinstance(module, Conv1D)  # stored [K, N]
            weight = module.weight.numpy()
            weight = weight.T if conv1d else weight  # [N, K]
            values = quantize(np.ascontiguousarray(weight))
            module.weight.copy_(torch.from_numpy(values.T.copy() if conv1d else values))
    return copied

"""transformers with every int4-quantized weight replaced by its dequantized value.

The int4 graphs must reproduce this model up to activation rounding: that checks packing,
layouts (Linear and Conv1D), packed projections and both int4 kernels, on any weights.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from converter.quantize import quantize_q4


def dequantized_copy(model, block_size: int = 32, symmetric: bool = True, tables: bool = False):
    """`tables`: also the token embedding and lm_head (what --int4-lm-head quantizes); other
    embedding tables (positions, per-layer inputs) are gathered, never multiplied: float."""
    copied = copy.deepcopy(model)
    heads = (copied.get_input_embeddings(), copied.get_output_embeddings())
    token_tables = {id(m.weight) for m in heads if m is not None}
    gathered = {id(m.weight) for m in copied.modules() if isinstance(m, torch.nn.Embedding)}
    conv1d = model.config.model_type == "gpt2"
    with torch.no_grad():
        for param in copied.parameters():
            table = id(param) in token_tables | gathered
            if param.ndim != 2 or (table and not (tables and id(param) in token_tables)):
                continue
            weight = param.numpy().T if conv1d else param.numpy()  # [N, K]
            q4 = quantize_q4(np.ascontiguousarray(weight), block_size, symmetric)
            values = q4.dequantize()
            param.copy_(torch.from_numpy(values.T.copy() if conv1d else values))
    return copied

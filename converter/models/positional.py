"""The body of decoders that add absolute positions (learned or sinusoidal) to the token
embeddings: GPT-2 and its kin (GPT-Neo, GPT-BigCode, OpenAI GPT), CTRL, and fairseq's OPT,
BioGPT and XGLM."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.positions import LearnedPositions
from converter.config import ArchitectureConfig
from converter.execution_providers import ExecutionProvider
from converter.models.decoder import DecoderBody
from converter.tasks.text_generation import DecoderInputs


class PositionalBody(DecoderBody):
    """The generic body plus a position table under `positions_name`, its rows at position_ids
    added to the token embeddings: learned unless `make_positions` builds another."""

    positions_name = "embed_positions"

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__(cfg, dtype, ep)
        setattr(self, self.positions_name, self.make_positions(cfg, dtype))

    def make_positions(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> nn.Module:
        return LearnedPositions(cfg.max_position_embeddings, cfg.hidden_size, dtype)

    def embed(self, op, inputs: DecoderInputs):
        tokens = super().embed(op, inputs)
        return op.Add(tokens, getattr(self, self.positions_name)(op, inputs.position_ids))

"""BioGPT: OPT's fairseq layers under `biogpt`, scaled word embeddings, learned positions
offset by 2, a final `layer_norm` and a head named `output_projection`."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import Embedding, LayerNorm
from converter.components.positions import LearnedPositions
from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.models.opt import FAIRSEQ_POSITION_OFFSET, FairseqLayer
from converter.models.positional import PositionalBody, PositionalLM
from converter.registry import Family

# BioGPT's LayerNorms take torch's default epsilon; transformers never reads layer_norm_eps
TORCH_LAYER_NORM_EPS = 1e-5


class BioGptBody(PositionalBody):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        hidden = cfg.hidden_size
        self.embed_tokens = Embedding(cfg.vocab_size, hidden, dtype, scale=cfg.embedding_multiplier)
        self.embed_positions = LearnedPositions(
            cfg.max_position_embeddings, hidden, dtype, FAIRSEQ_POSITION_OFFSET
        )
        self.layers = nn.ModuleList(
            [FairseqLayer(cfg, i, dtype) for i in range(cfg.num_hidden_layers)]
        )
        self.layer_norm = LayerNorm(hidden, cfg.norm_eps, dtype)

    def token_table(self):
        return self.embed_tokens.weight

    def blocks(self):
        return self.layers

    def embed(self, op, inputs):
        x = self.embed_tokens(op, inputs.tokens, inputs.embedded)
        return op.Add(x, self.embed_positions(op, inputs.position_ids))

    def finish(self, op, x):
        return self.layer_norm(op, x)


class BioGptLM(PositionalLM):
    body_cls = BioGptBody
    body_name = "biogpt"
    head_name = "output_projection"


class BioGptRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        scale = r.float("hidden_size") ** 0.5 if r.bool("scale_embedding", True) else 1.0
        cfg = super().read(r)
        return dataclasses.replace(cfg, norm_eps=TORCH_LAYER_NORM_EPS, embedding_multiplier=scale)


FAMILIES = [
    Family(
        "biogpt",
        BioGptLM,
        "fairseq layers, scaled embeddings, learned positions offset by 2",
        ("microsoft/biogpt",),
        rules=BioGptRules(norm_type="layer", qkv_bias=True, o_bias=True, mlp_bias=True, rope=False),
        prefix="biogpt.",
    ),
]

"""XGLM: OPT's fairseq layers with scaled word embeddings and fairseq's sinusoidal positions
(offset by 2, the padding index's row zero), a final `layer_norm`."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir

from converter.components.positions import SinusoidalPositions, fairseq_frequencies
from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.models.decoder import DecoderLM
from converter.models.opt import FAIRSEQ_POSITION_OFFSET, FairseqBody
from converter.registry import Family


class XGLMBody(FairseqBody):
    def make_positions(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> SinusoidalPositions:
        frequencies = fairseq_frequencies(cfg.hidden_size)
        return SinusoidalPositions(frequencies, dtype, FAIRSEQ_POSITION_OFFSET, cfg.pad_token_id)


class XGLMLM(DecoderLM):
    body_cls = XGLMBody


class XGLMRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        r.alias(
            attention_heads="num_attention_heads",
            num_layers="num_hidden_layers",
            ffn_dim="intermediate_size",
        )
        if r.bool("add_cross_attention", False):
            r.refuse("add_cross_attention", "a decoder-only export has no encoder to attend to")
        scale = r.float("d_model") ** 0.5 if r.bool("scale_embedding", True) else 1.0
        return dataclasses.replace(super().read(r), embedding_multiplier=scale)


FAMILIES = [
    Family(
        "xglm",
        XGLMLM,
        "fairseq layers, scaled embeddings, sinusoidal positions offset by 2",
        ("facebook/xglm-564M",),
        rules=XGLMRules(norm_type="layer", qkv_bias=True, o_bias=True, mlp_bias=True, rope=False),
        prefix="model.",
    ),
]

"""OPT: learned positions offset by 2, fairseq's decoder layer (`self_attn` with `out_proj`,
`fc1`/`fc2` on the layer), norms before each block or (OPT-350m) after each residual sum, and
word embeddings narrower than the layers (`project_in` / `project_out`)."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, LayerNorm, Linear, activation
from converter.components.positions import LearnedPositions
from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules, extend
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import DecoderLM, attention_spec
from converter.models.positional import PositionalBody
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs

# fairseq's learned positions skip two rows (its padding index + 1)
FAIRSEQ_POSITION_OFFSET = 2


@dataclass(frozen=True)
class OPTConfig(ArchitectureConfig):
    word_embed_proj_dim: int = 0  # the width of the word embeddings and the LM head
    final_norm: bool = True


class FairseqAttention(Attention):
    out_proj_name = "out_proj"


class FairseqLayer(nn.Module):
    """fairseq's decoder layer (OPT, BioGPT, XGLM): `self_attn` and `self_attn_layer_norm`,
    then `fc1`/`fc2` and `final_layer_norm`, norms before each block ("pre") or after each
    residual sum ("post_residual")."""

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        hidden, inner, eps = cfg.hidden_size, cfg.intermediate_size, cfg.norm_eps
        self.self_attn = FairseqAttention(cfg, dtype, attention_spec(cfg, index))
        self.self_attn_layer_norm = LayerNorm(hidden, eps, dtype)
        self.fc1 = Linear(hidden, inner, cfg.mlp_bias, dtype)
        self.fc2 = Linear(inner, hidden, cfg.mlp_bias, dtype)
        self.final_layer_norm = LayerNorm(hidden, eps, dtype)
        self.norm_first = cfg.layout == "pre"
        self.act = cfg.activation

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a residual sum (the first layer's first one: tokens + positions)
        return {"skip_norms": 2} if plan.has(SKIP_NORM) else {}

    def _mlp(self, op, x):
        return self.fc2(op, activation(op, self.act, self.fc1(op, x)))

    def forward(self, op, x, kernel, past_key, past_value):
        if self.norm_first:
            h = self.self_attn_layer_norm(op, x)
            a, key, value = self.self_attn(op, h, kernel, past_key, past_value)
            x = op.Add(x, a)
            return op.Add(x, self._mlp(op, self.final_layer_norm(op, x))), key, value
        a, key, value = self.self_attn(op, x, kernel, past_key, past_value)
        x = self.self_attn_layer_norm(op, op.Add(x, a))
        return self.final_layer_norm(op, op.Add(x, self._mlp(op, x))), key, value


class FairseqBody(PositionalBody):
    """fairseq's decoder (OPT, BioGPT, XGLM): `embed_tokens` plus `embed_positions` (learned,
    offset by 2, unless a family makes others), fairseq `layers` and `layer_norm`."""

    layer_cls = FairseqLayer
    final_norm_name = "layer_norm"

    def make_positions(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> nn.Module:
        hidden = cfg.hidden_size
        return LearnedPositions(cfg.max_position_embeddings, hidden, dtype, FAIRSEQ_POSITION_OFFSET)


class OPTDecoder(FairseqBody):
    """Word embeddings `word_embed_proj_dim` wide, projected in and out when that is not the
    layers' width; `final_layer_norm` only where the config keeps it."""

    final_norm_name = "final_layer_norm"

    def __init__(self, cfg: OPTConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        hidden, width = cfg.hidden_size, cfg.word_embed_proj_dim
        projected = width != hidden
        self.project_in = Linear(width, hidden, False, dtype) if projected else None
        self.project_out = Linear(hidden, width, False, dtype) if projected else None

    def make_embedding(self, cfg: OPTConfig, dtype: ir.DataType) -> Embedding:
        return Embedding(cfg.vocab_size, cfg.word_embed_proj_dim, dtype)

    def make_final_norm(self, cfg: OPTConfig, dtype: ir.DataType) -> nn.Module | None:
        return super().make_final_norm(cfg, dtype) if cfg.final_norm else None

    def embed(self, op, inputs: DecoderInputs):
        x = self.embedding(op, inputs.tokens, inputs.embedded)
        if self.project_in is not None:
            x = self.project_in(op, x)
        return op.Add(x, self.embed_positions(op, inputs.position_ids))

    def forward(self, op, inputs: DecoderInputs):
        hidden, presents = super().forward(op, inputs)
        if self.project_out is not None:
            hidden = self.project_out(op, hidden)
        return hidden, presents


class OPTModel(nn.Module):
    """`model`, whose `decoder` is the body."""

    def __init__(self, cfg: OPTConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.decoder = OPTDecoder(cfg, dtype, ep)
        self.kernel = self.decoder.kernel

    @property
    def embedding(self) -> Embedding:
        return self.decoder.embedding

    def forward(self, op, inputs: DecoderInputs):
        return self.decoder(op, inputs)


class OPTLM(DecoderLM):
    body_cls = OPTModel

    def make_head(self, cfg: OPTConfig, dtype: ir.DataType) -> Linear | None:
        """A head as wide as the word embeddings, unless tied to them."""
        if cfg.tie_word_embeddings:
            return None
        return Linear(cfg.word_embed_proj_dim, cfg.vocab_size, False, dtype, head=True)


class OPTRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> OPTConfig:
        r.alias(ffn_dim="intermediate_size", enable_bias="attention_bias")
        if not r.bool("layer_norm_elementwise_affine", True):
            r.refuse("layer_norm_elementwise_affine", "norms without weights are not built")
        cfg = super().read(r)
        norm_first = r.bool("do_layer_norm_before", True)
        return extend(
            cfg,
            OPTConfig,
            layout="pre" if norm_first else "post_residual",
            mlp_bias=cfg.qkv_bias,
            word_embed_proj_dim=r.int("word_embed_proj_dim", default=cfg.hidden_size),
            # transformers keeps the final norm only with norms before each block
            final_norm=norm_first and not r.bool("_remove_final_layer_norm", False),
        )


FAMILIES = [
    Family(
        "opt",
        OPTLM,
        "learned positions offset by 2, LayerNorm before or after blocks, projected embeddings",
        ("facebook/opt-125m", "facebook/opt-350m"),
        rules=OPTRules(norm_type="layer", rope=False),
    ),
]

"""The skeleton of decoders that add absolute positions (learned or sinusoidal) to the token
embeddings: OPT, BioGPT, XGLM, GPT-Neo, GPT-BigCode, OpenAI GPT and CTRL. Each family builds
its modules under its checkpoint's names; these classes run them and count their fusions."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.cache import LayerCache
from converter.components.linear import Bias, Linear
from converter.config import ArchitectureConfig
from converter.execution_providers import GQA, SKIP_NORM, ExecutionProvider
from converter.models.decoder import (
    AttentionKernelChoice,
    layer_caches,
    project_logits,
    tied_head_fusions,
)
from converter.tasks.text_generation import DecoderInputs


class PositionalBody(nn.Module):
    """Subclasses build their modules and give `embed(op, inputs)` (tokens plus positions),
    `blocks()` (their layers, each `(op, x, kernel, past_key, past_value) -> (x, key, value)`)
    and `finish(op, x)` (final norm, projections)."""

    final_norms = 1  # norms after the last layer: each reads a residual sum (a skip norm)
    head_width: int  # the width of the hidden states the LM head reads

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.kernel = AttentionKernelChoice(cfg, ep, dtype)
        self.head_width = cfg.hidden_size

    def expected_fusions(self, plan) -> dict[str, int]:
        counts = {"skip_norms": self.final_norms} if plan.has(SKIP_NORM) else {}
        if plan.has(GQA):
            counts[GQA] = len(self.blocks()) if self.kernel.gqa else 0
        return counts

    def finish(self, op, x):
        return x

    def forward(self, op, inputs: DecoderInputs):
        x = self.embed(op, inputs)
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        presents = []
        for block, (past_key, past_value) in zip(self.blocks(), inputs.past, strict=True):
            x, key, value = block(op, x, kernel, past_key, past_value)
            presents.append((key, value))
        return self.finish(op, x), presents


class PositionalLM(nn.Module):
    """The body under `body_name` and the head under `head_name`: a Linear, or the body's token
    table when the config ties them (plus a bias of its own with `head_bias`, as CTRL has)."""

    body_cls: type[PositionalBody]
    body_name = "transformer"
    head_name = "lm_head"
    head_bias = False

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.cfg = cfg
        body = self.body_cls(cfg, dtype, ep)
        setattr(self, self.body_name, body)
        if not cfg.tie_word_embeddings:
            head = Linear(body.head_width, cfg.vocab_size, self.head_bias, dtype, head=True)
            setattr(self, self.head_name, head)
        elif self.head_bias:
            setattr(self, self.head_name, Bias(cfg.vocab_size, dtype))

    @property
    def body(self) -> PositionalBody:
        return getattr(self, self.body_name)

    def embedding_table(self):
        return self.body.token_table()

    def caches(self) -> list[LayerCache]:
        return layer_caches(self.cfg)

    def fallbacks(self) -> list[str]:
        return list(self.body.kernel.fallbacks)

    def expected_fusions(self, plan) -> dict[str, int]:
        return tied_head_fusions(self.cfg, plan)

    def forward(self, op, inputs: DecoderInputs):
        hidden, presents = self.body(op, inputs)
        head = getattr(self, self.head_name, None)
        logits = project_logits(op, self, self.cfg, hidden, head)
        if self.cfg.tie_word_embeddings and self.head_bias:
            logits = head(op, logits)
        return logits, presents

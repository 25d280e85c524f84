"""GPT-2: learned absolute positions, LayerNorm, fused `c_attn` in Conv1D ([in, out]) layout."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import Conv1D, Embedding, LayerNorm, Linear, activation
from converter.components.cache import LayerCache
from converter.config import ArchitectureConfig, ConfigRules
from converter.execution_providers import GQA, SKIP_NORM, ExecutionProvider
from converter.models.decoder import (
    AttentionKernelChoice,
    attention_spec,
    layer_caches,
    project_logits,
    tied_head_fusions,
)
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs


class GPT2Attention(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.c_attn = Conv1D(cfg.hidden_size, 3 * cfg.hidden_size, dtype)
        self.c_proj = Conv1D(cfg.hidden_size, cfg.hidden_size, dtype)
        spec = attention_spec(cfg, index)
        if cfg.scale_by_inverse_layer:
            spec = dataclasses.replace(spec, scale=spec.scale / (index + 1))
        self.spec = spec

    def forward(self, op, x, kernel, past_key, past_value):
        q, k, v = op.Split(self.c_attn(op, x), axis=-1, num_outputs=3, _outputs=3)
        y, key, value = kernel(op, q, k, v, past_key, past_value, self.spec)
        return self.c_proj(op, y), key, value


class GPT2MLP(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType):
        super().__init__()
        self.act = cfg.activation
        self.c_fc = Conv1D(cfg.hidden_size, cfg.intermediate_size, dtype)
        self.c_proj = Conv1D(cfg.intermediate_size, cfg.hidden_size, dtype)

    def forward(self, op, x):
        return self.c_proj(op, activation(op, self.act, self.c_fc(op, x)))


class GPT2Block(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.ln_1 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.attn = GPT2Attention(cfg, index, dtype)
        self.ln_2 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = GPT2MLP(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # ln_1 reads a sum in every block (the first one's is wte + wpe), and ln_2
        return {"skip_norms": 2} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.attn(op, self.ln_1(op, x), kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.ln_2(op, x))), key, value


class GPT2Body(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.kernel = AttentionKernelChoice(cfg, ep, dtype)
        self.wte = Embedding(cfg.vocab_size, cfg.hidden_size, dtype)
        self.wpe = Embedding(cfg.max_position_embeddings, cfg.hidden_size, dtype)
        self.h = nn.ModuleList([GPT2Block(cfg, i, dtype) for i in range(cfg.num_hidden_layers)])
        self.ln_f = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        counts = {"skip_norms": 1} if plan.has(SKIP_NORM) else {}  # ln_f
        if plan.has(GQA):
            counts[GQA] = len(self.h) if self.kernel.gqa else 0
        return counts

    def forward(self, op, inputs: DecoderInputs):
        x = self.wte(op, inputs.tokens, inputs.embedded)
        x = op.Add(x, self.wpe(op, inputs.position_ids))
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        presents = []
        for block, (past_key, past_value) in zip(self.h, inputs.past, strict=True):
            x, key, value = block(op, x, kernel, past_key, past_value)
            presents.append((key, value))
        return self.ln_f(op, x), presents


class GPT2LM(nn.Module):
    """`transformer` (the body) and logits from the tied `wte` table (or `lm_head`)."""

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.cfg = cfg
        self.transformer = GPT2Body(cfg, dtype, ep)
        if not cfg.tie_word_embeddings:
            self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, False, dtype, head=True)

    def embedding_table(self):
        return self.transformer.wte.weight

    def caches(self) -> list[LayerCache]:
        return layer_caches(self.cfg)

    def fallbacks(self) -> list[str]:
        return list(self.transformer.kernel.fallbacks)

    def expected_fusions(self, plan) -> dict[str, int]:
        return tied_head_fusions(self.cfg, plan)

    def forward(self, op, inputs: DecoderInputs):
        hidden, presents = self.transformer(op, inputs)
        return project_logits(op, self, self.cfg, hidden), presents


_GPT2_RULES = ConfigRules(norm_type="layer", qkv_bias=True, o_bias=True, mlp_bias=True, rope=False)
_GPT2_UNUSED = (r"(transformer\.)?h\.\d+\.attn\.(masked_)?bias",)
FAMILIES = [
    Family(
        "gpt2",
        GPT2LM,
        "learned absolute positions, LayerNorm, fused Conv1D c_attn",
        ("openai-community/gpt2",),
        rules=_GPT2_RULES,
        unused=_GPT2_UNUSED,
        prefix="transformer.",
    ),
    # GPT-SW3 is GPT-2 under another model_type (transformers reads it with GPT2Config); it runs
    # as onnxruntime-genai's generic decoder (0.18's "gpt2" type asks for inputs it lacks)
    Family(
        "gpt-sw3",
        GPT2LM,
        "GPT-2 under another name",
        ("AI-Sweden-Models/gpt-sw3-126m",),
        rules=_GPT2_RULES,
        unused=_GPT2_UNUSED,
        prefix="transformer.",
    ),
]

"""GPT-2: learned absolute positions, LayerNorm, fused `c_attn` in Conv1D ([in, out]) layout."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
from onnxscript import nn

from converter.components import Conv1D, Embedding, LayerNorm, Linear, activation
from converter.config import ArchitectureConfig
from converter.execution_providers import ExecutionProvider
from converter.models.decoder import AttentionKernelChoice, attention_spec, project_logits


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

    def forward(self, op, input_ids, attention_mask, position_ids, past):
        x = op.Add(self.wte(op, input_ids), self.wpe(op, position_ids))
        kernel = self.kernel.make(op, input_ids, attention_mask, position_ids)
        presents = []
        for block, (past_key, past_value) in zip(self.h, past, strict=True):
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
            self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, False, dtype)

    def embedding_table(self):
        return self.transformer.wte.weight

    def fallbacks(self) -> list[str]:
        return list(self.transformer.kernel.fallbacks)

    def uses_gqa(self) -> bool:
        return self.transformer.kernel.gqa

    def expected_skip_norms(self) -> int:
        return 2 * self.cfg.num_hidden_layers + 1  # ln_1 (after wte + wpe) and ln_2 per block, ln_f

    def forward(self, op, input_ids, attention_mask, position_ids, past):
        hidden, presents = self.transformer(op, input_ids, attention_mask, position_ids, past)
        return project_logits(op, self, self.cfg, hidden), presents

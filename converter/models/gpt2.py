"""GPT-2: learned absolute positions, LayerNorm, fused `c_attn` in Conv1D ([in, out]) layout."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Conv1D, LayerNorm, activation
from converter.components.attention import AttentionSpec
from converter.config import ArchitectureConfig, ConfigRules
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import DecoderLM, attention_spec
from converter.models.positional import PositionalBody
from converter.registry import Family


class GPT2Attention(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, spec: AttentionSpec):
        super().__init__()
        self.c_attn = Conv1D(cfg.hidden_size, 3 * cfg.hidden_size, dtype)
        self.c_proj = Conv1D(cfg.hidden_size, cfg.hidden_size, dtype)
        self.spec = spec

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

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
    """ln_1, attn, ln_2, mlp; subclasses give other `attention_cls` and `mlp_cls`."""

    attention_cls: type[nn.Module] = GPT2Attention
    mlp_cls: type[nn.Module] = GPT2MLP

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.ln_1 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.attn = self.attention_cls(cfg, dtype, attention_spec(cfg, index))
        self.ln_2 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = self.mlp_cls(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # ln_1 reads a sum in every block (the first one's is wte + wpe), and ln_2
        return {"skip_norms": 2} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.attn(op, self.ln_1(op, x), kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.ln_2(op, x))), key, value


class GPT2Body(PositionalBody):
    layer_cls = GPT2Block
    embedding_name, positions_name, layers_name, final_norm_name = "wte", "wpe", "h", "ln_f"


class GPT2LM(DecoderLM):
    """`transformer` (the body) and logits from the tied `wte` table (or `lm_head`)."""

    body_cls = GPT2Body
    body_name = "transformer"


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

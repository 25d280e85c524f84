"""GPT-Neo: GPT-2's layout with torch Linear layers, unscaled attention (no 1/sqrt(d)), and
layers alternating global and local (windowed) attention as `attention_types` lists them."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, LayerNorm, Linear, activation
from converter.components.positions import LearnedPositions
from converter.config import FULL, SLIDING, ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import attention_spec
from converter.models.positional import PositionalBody, PositionalLM
from converter.registry import Family


class LinearMLP(nn.Module):
    """c_proj(act(c_fc(x))) with torch Linear weights (GPT-2's are Conv1D)."""

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType):
        super().__init__()
        self.act = cfg.activation
        self.c_fc = Linear(cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias, dtype)
        self.c_proj = Linear(cfg.intermediate_size, cfg.hidden_size, cfg.mlp_bias, dtype)

    def forward(self, op, x):
        return self.c_proj(op, activation(op, self.act, self.c_fc(op, x)))


class GPTBlock(nn.Module):
    """ln_1, attn, ln_2, mlp: GPT-2's block, its attention given by `attention_cls`."""

    attention_cls: type[nn.Module]

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.ln_1 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.attn = self.attention_cls(cfg, index, dtype)
        self.ln_2 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = LinearMLP(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # ln_1 reads a sum in every block (the first one's is wte + wpe), and ln_2
        return {"skip_norms": 2} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.attn(op, self.ln_1(op, x), kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.ln_2(op, x))), key, value


class GPTBody(PositionalBody):
    """`wte` + `wpe`, the blocks `h`, `ln_f`."""

    block_cls: type[GPTBlock]

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        hidden = cfg.hidden_size
        self.wte = Embedding(cfg.vocab_size, hidden, dtype)
        self.wpe = LearnedPositions(cfg.max_position_embeddings, hidden, dtype)
        self.h = nn.ModuleList(
            [self.block_cls(cfg, i, dtype) for i in range(cfg.num_hidden_layers)]
        )
        self.ln_f = LayerNorm(hidden, cfg.norm_eps, dtype)

    def token_table(self):
        return self.wte.weight

    def blocks(self):
        return self.h

    def embed(self, op, inputs):
        return op.Add(
            self.wte(op, inputs.tokens, inputs.embedded), self.wpe(op, inputs.position_ids)
        )

    def finish(self, op, x):
        return self.ln_f(op, x)


class NeoSelfAttention(Attention):
    out_proj_name = "out_proj"


class GPTNeoAttention(nn.Module):
    """`attn.attention`: the projections sit one module deeper than GPT-2's."""

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.attention = NeoSelfAttention(cfg, dtype, attention_spec(cfg, index))

    def forward(self, op, x, kernel, past_key, past_value):
        return self.attention(op, x, kernel, past_key, past_value)


class GPTNeoBlock(GPTBlock):
    attention_cls = GPTNeoAttention


class GPTNeoBody(GPTBody):
    block_cls = GPTNeoBlock


class GPTNeoLM(PositionalLM):
    body_cls = GPTNeoBody


_LAYER_TYPES = {"global": FULL, "local": SLIDING}


class GPTNeoRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        r.alias(num_heads="num_attention_heads", num_layers="num_hidden_layers")
        r.alias(window_size="sliding_window")
        return super().read(r)

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        """`attention_types` [[["global", "local"], repeats], ...], expanded, at `index`."""
        spec = r.get("attention_types", default=[[["global", "local"], 12]])
        try:
            kinds = [kind for pattern, repeats in spec for _ in range(repeats) for kind in pattern]
        except (TypeError, ValueError):
            form = "[[[types], repeats], ...]"
            raise ConfigError(f"'attention_types' = {spec!r} is not {form}") from None
        # like transformers, layers past the last one leave their entries unread
        if len(kinds) < r.int("num_hidden_layers") or not set(kinds) <= set(_LAYER_TYPES):
            raise ConfigError(
                f"'attention_types' = {spec!r} must give one of {sorted(_LAYER_TYPES)} per layer"
            )
        return _LAYER_TYPES[kinds[index]]

    def attention_scale(self, r: ConfigReader, head_dim: int) -> float:
        return 1.0  # GPT-Neo does not scale its attention scores


FAMILIES = [
    Family(
        "gpt_neo",
        GPTNeoLM,
        "learned positions, unscaled attention, alternating global and local attention",
        ("EleutherAI/gpt-neo-125m",),
        rules=GPTNeoRules(
            norm_type="layer", qkv_bias=False, o_bias=True, mlp_bias=True, rope=False
        ),
        unused=(r"(transformer\.)?h\.\d+\.attn\.attention\.(masked_)?bias",),
        prefix="transformer.",
    ),
]

"""OpenAI GPT (GPT-1): GPT-2's Conv1D attention and MLP with norms after each residual sum
and no final norm; `tokens_embed` + `positions_embed`."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Embedding, LayerNorm
from converter.components.positions import LearnedPositions
from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.gpt2 import GPT2MLP, GPT2Attention
from converter.models.positional import PositionalBody, PositionalLM
from converter.registry import Family


class OpenAIGPTBlock(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.attn = GPT2Attention(cfg, index, dtype)
        self.ln_1 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = GPT2MLP(cfg, dtype)
        self.ln_2 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 2} if plan.has(SKIP_NORM) else {}  # both norms read a sum

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.attn(op, x, kernel, past_key, past_value)
        x = self.ln_1(op, op.Add(x, a))
        return self.ln_2(op, op.Add(x, self.mlp(op, x))), key, value


class OpenAIGPTBody(PositionalBody):
    final_norms = 0

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        self.tokens_embed = Embedding(cfg.vocab_size, cfg.hidden_size, dtype)
        self.positions_embed = LearnedPositions(cfg.max_position_embeddings, cfg.hidden_size, dtype)
        self.h = nn.ModuleList(
            [OpenAIGPTBlock(cfg, i, dtype) for i in range(cfg.num_hidden_layers)]
        )

    def token_table(self):
        return self.tokens_embed.weight

    def blocks(self):
        return self.h

    def embed(self, op, inputs):
        x = self.tokens_embed(op, inputs.tokens, inputs.embedded)
        return op.Add(x, self.positions_embed(op, inputs.position_ids))


class OpenAIGPTLM(PositionalLM):
    body_cls = OpenAIGPTBody


# `afn` names; its "gelu" is the tanh approximation
_ACTIVATIONS = {"gelu": "gelu_new", "relu": "relu", "silu": "silu", "swish": "silu"}


class OpenAIGPTRules(MultiHeadRules):
    def activation(self, r: ConfigReader) -> str:
        name = r.str("afn")
        if name not in _ACTIVATIONS:
            raise ConfigError(f"'afn' = {name!r} is not one of {sorted(_ACTIVATIONS)}")
        return _ACTIVATIONS[name]


FAMILIES = [
    Family(
        "openai-gpt",
        OpenAIGPTLM,
        "learned positions, Conv1D layers, LayerNorm after each residual sum",
        ("openai-community/openai-gpt",),
        rules=OpenAIGPTRules(
            norm_type="layer",
            layout="post_residual",
            qkv_bias=True,
            o_bias=True,
            mlp_bias=True,
            rope=False,
        ),
        unused=(r"(transformer\.)?h\.\d+\.attn\.bias", r"(transformer\.)?position_ids"),
        prefix="transformer.",
    ),
]

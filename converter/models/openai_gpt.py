"""OpenAI GPT (GPT-1): GPT-2's Conv1D attention and MLP with norms after each residual sum
and no final norm; `tokens_embed` + `positions_embed`."""

from __future__ import annotations

import onnx_ir as ir

from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.errors import ConfigError
from converter.models.gpt2 import GPT2LM, GPT2Block, GPT2Body
from converter.registry import Family


class OpenAIGPTBlock(GPT2Block):
    """GPT-2's block with its norms after each residual sum (both read a sum)."""

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.attn(op, x, kernel, past_key, past_value)
        x = self.ln_1(op, op.Add(x, a))
        return self.ln_2(op, op.Add(x, self.mlp(op, x))), key, value


class OpenAIGPTBody(GPT2Body):
    layer_cls = OpenAIGPTBlock
    embedding_name, positions_name = "tokens_embed", "positions_embed"

    def make_final_norm(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> None:
        return None  # the last block's ln_2 is the last norm


class OpenAIGPTLM(GPT2LM):
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

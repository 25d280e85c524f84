"""CTRL: scaled word embeddings plus sinusoidal positions, pre-norm layers with `Wq`/`Wk`/`Wv`/
`dense` attention and a ReLU `ffn` Sequential, and an LM head tied to the embeddings that keeps
a bias of its own."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, LayerNorm, Linear
from converter.components.positions import SinusoidalPositions
from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import attention_spec
from converter.models.positional import PositionalBody, PositionalLM
from converter.registry import Family

LAYER_NORM_EPS = 1e-6  # CTRL's layer norms inside the layers; config.json sets only the final one


def ctrl_frequencies(dim: int) -> np.ndarray:
    """1 / 10000^(2i / dim) for i < dim / 2, in float32 as CTRL computes them."""
    if dim % 2:
        raise ConfigError(f"'n_embd' = {dim}: sinusoidal positions need an even width")
    exponents = np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)
    return np.float32(1) / np.power(np.float32(10000), exponents)


class CTRLAttention(Attention):
    qkv_names = ("Wq", "Wk", "Wv")
    out_proj_name = "dense"


class ReLU(nn.Module):
    def forward(self, op, x):
        return op.Relu(x)


class CTRLLayer(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        hidden, inner = cfg.hidden_size, cfg.intermediate_size
        self.multi_head_attention = CTRLAttention(cfg, dtype, attention_spec(cfg, index))
        self.ffn = nn.Sequential(
            Linear(hidden, inner, True, dtype), ReLU(), Linear(inner, hidden, True, dtype)
        )
        self.layernorm1 = LayerNorm(hidden, LAYER_NORM_EPS, dtype)
        self.layernorm2 = LayerNorm(hidden, LAYER_NORM_EPS, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a residual sum (the first layer's first one: tokens + positions)
        return {"skip_norms": 2} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.layernorm1(op, x)
        a, key, value = self.multi_head_attention(op, h, kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.ffn(op, self.layernorm2(op, x))), key, value


class CTRLBody(PositionalBody):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        hidden = cfg.hidden_size
        self.w = Embedding(cfg.vocab_size, hidden, dtype, scale=hidden**0.5)
        self.positions = SinusoidalPositions(ctrl_frequencies(hidden), dtype)
        self.h = nn.ModuleList([CTRLLayer(cfg, i, dtype) for i in range(cfg.num_hidden_layers)])
        self.layernorm = LayerNorm(hidden, cfg.norm_eps, dtype)

    def token_table(self):
        return self.w.weight

    def blocks(self):
        return self.h

    def embed(self, op, inputs):
        x = self.w(op, inputs.tokens, inputs.embedded)
        return op.Add(x, self.positions(op, inputs.position_ids))

    def finish(self, op, x):
        return self.layernorm(op, x)


class CTRLLM(PositionalLM):
    body_cls = CTRLBody
    head_bias = True


class CTRLRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> ArchitectureConfig:
        r.alias(dff="intermediate_size")
        return super().read(r)

    def activation(self, r: ConfigReader) -> str:
        return "relu"  # the ffn's, which config.json does not name


FAMILIES = [
    Family(
        "ctrl",
        CTRLLM,
        "scaled embeddings, sinusoidal positions, tied LM head with its own bias",
        ("Salesforce/ctrl",),
        rules=CTRLRules(norm_type="layer", qkv_bias=True, o_bias=True, mlp_bias=True, rope=False),
        prefix="transformer.",
    ),
]

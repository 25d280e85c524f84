"""CTRL: scaled word embeddings plus sinusoidal positions, pre-norm layers with `Wq`/`Wk`/`Wv`/
`dense` attention and a ReLU `ffn` Sequential, and an LM head tied to the embeddings that keeps
a bias of its own."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, LayerNorm, PlainMLP
from converter.components.positions import SinusoidalPositions
from converter.config import ArchitectureConfig, ConfigReader, MultiHeadRules
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import DecoderLM, attention_spec
from converter.models.positional import PositionalBody
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


class CTRLFeedForward(PlainMLP):
    """The `ffn` Sequential: Linear, ReLU, Linear (the ReLU holds index 1)."""

    in_name, out_name = "0", "2"


class CTRLLayer(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        hidden = cfg.hidden_size
        self.multi_head_attention = CTRLAttention(cfg, dtype, attention_spec(cfg, index))
        self.ffn = CTRLFeedForward(cfg, dtype)
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
    """`w` (scaled by sqrt(n_embd)) plus sinusoidal `positions`, the layers `h`, `layernorm`."""

    layer_cls = CTRLLayer
    embedding_name, positions_name = "w", "positions"
    layers_name, final_norm_name = "h", "layernorm"

    def make_positions(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> SinusoidalPositions:
        return SinusoidalPositions(ctrl_frequencies(cfg.hidden_size), dtype)


class CTRLLM(DecoderLM):
    body_cls = CTRLBody
    body_name = "transformer"
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
        rules=CTRLRules(
            norm_type="layer",
            embed_scale_sqrt=True,
            qkv_bias=True,
            o_bias=True,
            mlp_bias=True,
            rope=False,
        ),
        prefix="transformer.",
    ),
]

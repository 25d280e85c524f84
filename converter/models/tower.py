"""The pre-norm transformer stack of CLIP-style towers (CLIP, SigLIP and their relatives, text
and vision alike): `layers.N` of LayerNorm -> attention (q/k/v/out_proj) -> residual, LayerNorm
-> MLP (fc1, fc2) -> residual, with the checkpoints' names."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.config.two_tower import TowerLayers
from converter.execution_providers import ENCODER_MHA, SKIP_NORM


class TowerAttention(nn.Module):
    def __init__(self, cfg: TowerLayers, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.q_proj = Linear(size, size, True, dtype)
        self.k_proj = Linear(size, size, True, dtype)
        self.v_proj = Linear(size, size, True, dtype)
        self.out_proj = Linear(size, size, True, dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel):
        q, k, v = self.q_proj(op, x), self.k_proj(op, x), self.v_proj(op, x)
        return self.out_proj(op, kernel(op, q, k, v, self.heads, self.scale))


class TowerMlp(nn.Module):
    def __init__(self, cfg: TowerLayers, dtype: ir.DataType):
        super().__init__()
        self.fc1 = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.fc2 = Linear(cfg.intermediate_size, cfg.hidden_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.fc2(op, activation(op, self.act, self.fc1(op, x)))


class TowerLayer(nn.Module):
    def __init__(self, cfg: TowerLayers, dtype: ir.DataType):
        super().__init__()
        self.layer_norm1 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.self_attn = TowerAttention(cfg, dtype)
        self.layer_norm2 = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.mlp = TowerMlp(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a residual sum (the first layer's: what the tower's embeddings
        # add up, which each tower corrects where its stack starts from a norm)
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel):
        x = op.Add(x, self.self_attn(op, self.layer_norm1(op, x), kernel))
        return op.Add(x, self.mlp(op, self.layer_norm2(op, x)))


class TowerEncoder(nn.Module):
    """The layers, under `layers` (or the name a checkpoint gives them: `layer` in AltCLIP's
    saved by transformers 5)."""

    def __init__(self, cfg: TowerLayers, dtype: ir.DataType, name: str = "layers"):
        super().__init__()
        layers = nn.ModuleList([TowerLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)])
        setattr(self, name, layers)
        self.layers_name = name

    def forward(self, op, x, kernel, states: list | None = None):
        """The last layer's output; each layer's is appended to `states` when given."""
        for layer in getattr(self, self.layers_name):
            x = layer(op, x, kernel)
            if states is not None:
                states.append(x)
        return x


def skip_norms(plan, count: int) -> dict[str, int]:
    """`count` more (or fewer) fused skip norms than the tower's layers declare."""
    return {"skip_norms": count if plan.has(SKIP_NORM) else 0}

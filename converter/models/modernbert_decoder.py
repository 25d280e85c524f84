"""ModernBERT decoder (Ettin): a normed embedding, no attention norm in the first layer, GeGLU
`Wi`/`Wo`, rotary with one base for global and another for local (windowed) layers, and a
head of dense + activation + norm before the `decoder` projection (tied, with its own bias)."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, Linear, activation, make_norm
from converter.config import (
    FULL,
    SLIDING,
    ArchitectureConfig,
    ConfigReader,
    MultiHeadRules,
    Rope,
    extend,
    parse_local_rope,
    parse_rope,
)
from converter.execution_providers import SKIP_NORM
from converter.models.decoder import DecoderBody, DecoderLM, attention_spec
from converter.registry import Family


@dataclass(frozen=True)
class ModernBertDecoderConfig(ArchitectureConfig):
    norm_bias: bool = False
    classifier_bias: bool = False
    classifier_activation: str = "gelu"
    decoder_bias: bool = True


class ModernBertAttention(Attention):
    out_proj_name = "Wo"


class GeGLU(nn.Module):
    """Wo(act(input) * gate), `Wi` projecting to [input | gate]."""

    def __init__(self, cfg: ModernBertDecoderConfig, dtype: ir.DataType):
        super().__init__()
        hidden, inner = cfg.hidden_size, cfg.intermediate_size
        self.act = cfg.activation
        self.Wi = Linear(hidden, 2 * inner, cfg.mlp_bias, dtype)
        self.Wo = Linear(inner, hidden, cfg.mlp_bias, dtype)

    def forward(self, op, x):
        value, gate = op.Split(self.Wi(op, x), axis=-1, num_outputs=2, _outputs=2)
        return self.Wo(op, op.Mul(activation(op, self.act, value), gate))


class ModernBertLayer(nn.Module):
    def __init__(self, cfg: ModernBertDecoderConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.first = index == 0  # reads the normed embeddings: no norm of its own
        if not self.first:
            self.attn_norm = make_norm(cfg, cfg.hidden_size, dtype)
        self.attn = ModernBertAttention(cfg, dtype, attention_spec(cfg, index))
        self.mlp_norm = make_norm(cfg, cfg.hidden_size, dtype)
        self.mlp = GeGLU(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # mlp_norm reads a residual sum, and so does attn_norm (the previous layer's output)
        return {"skip_norms": 1 + int(not self.first)} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        h = x if self.first else self.attn_norm(op, x)
        a, key, value = self.attn(op, h, kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.mlp_norm(op, x))), key, value


class ModernBertEmbeddings(nn.Module):
    def __init__(self, cfg: ModernBertDecoderConfig, dtype: ir.DataType):
        super().__init__()
        self.tok_embeddings = Embedding(cfg.vocab_size, cfg.hidden_size, dtype)
        self.norm = make_norm(cfg, cfg.hidden_size, dtype)

    @property
    def weight(self):
        """The token table, which a tied head reads."""
        return self.tok_embeddings.weight

    def forward(self, op, tokens, embedded: bool):
        return self.norm(op, self.tok_embeddings(op, tokens, embedded))


class ModernBertBody(DecoderBody):
    layer_cls = ModernBertLayer
    embedding_name, final_norm_name = "embeddings", "final_norm"

    def make_embedding(self, cfg: ModernBertDecoderConfig, dtype: ir.DataType):
        return ModernBertEmbeddings(cfg, dtype)


class PredictionHead(nn.Module):
    """norm(act(dense(x))), before the `decoder` projection."""

    def __init__(self, cfg: ModernBertDecoderConfig, dtype: ir.DataType):
        super().__init__()
        self.act = cfg.classifier_activation
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, cfg.classifier_bias, dtype)
        self.norm = make_norm(cfg, cfg.hidden_size, dtype)

    def forward(self, op, x):
        return self.norm(op, activation(op, self.act, self.dense(op, x)))


class ModernBertDecoderLM(DecoderLM):
    """The body, then `lm_head` (dense, activation, norm) before the `decoder` projection."""

    body_cls = ModernBertBody
    head_name = "decoder"

    def __init__(self, cfg: ModernBertDecoderConfig, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        self.lm_head = PredictionHead(cfg, dtype)

    @property
    def head_bias(self) -> bool:
        return self.cfg.decoder_bias

    def logits(self, op, hidden):
        return super().logits(op, self.lm_head(op, hidden))


class ModernBertDecoderRules(MultiHeadRules):
    def read(self, r: ConfigReader) -> ModernBertDecoderConfig:
        # older configs: one rope base per layer type, every n-th layer global
        r.alias(global_rope_theta="rope_theta", local_rope_theta="rope_local_base_freq")
        # transformers derives the window as half of local_attention unless config.json has it
        if not r.has("sliding_window") and r.has("local_attention"):
            r.raw["sliding_window"] = r.int("local_attention") // 2
        cfg = super().read(r)
        return extend(
            cfg,
            ModernBertDecoderConfig,
            norm_bias=r.bool("norm_bias", False),
            classifier_bias=r.bool("classifier_bias", False),
            classifier_activation=r.str("classifier_activation"),
            decoder_bias=r.bool("decoder_bias", True),
        )

    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        every = r.int("global_attn_every_n_layers", default=3)
        return FULL if index % every == 0 else SLIDING

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        if isinstance(r.raw.get("rope_parameters"), dict) and not r.raw.get("rope_scaling"):
            return parse_local_rope(r.raw, head_dim=head_dim)  # nested per layer type
        # older flat settings: rope_scaling applies to the local layers too, at their own base
        local = {**r.raw, "rope_theta": r.float("rope_local_base_freq")}
        return parse_rope(local, head_dim=head_dim)


FAMILIES = [
    Family(
        "modernbert-decoder",
        ModernBertDecoderLM,
        "normed embeddings, GeGLU, global/local rope bases and windows, head before decoder",
        ("jhu-clsp/ettin-decoder-17m",),
        rules=ModernBertDecoderRules(norm_type="layer"),
    ),
]

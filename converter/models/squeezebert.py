"""SqueezeBERT: BERT's computation with its projections as grouped pointwise convolutions
(`conv1d` weights [out, in / groups, 1]: block-diagonal projections, q_groups ... output_groups
blocks), the layer norms of `post_attention` and `output` at eps 1e-12 whatever layer_norm_eps
says, and BERT's embeddings, pooler and heads under `transformer`."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEmbeddings, BertEncoderModel, BertPredictions, Pooler
from converter.registry import Family
from converter.tasks.encoding import TextInputs

LAYER_NORM_EPS = 1e-12  # SqueezeBertLayerNorm's default, which transformers never overrides
GROUP_KEYS = (
    "q_groups",
    "k_groups",
    "v_groups",
    "post_attention_groups",
    "intermediate_groups",
    "output_groups",
)


class PointwiseConv(nn.Module):
    """A kernel-1 Conv1d with `groups` blocks, on channels-last x [batch, seq, in]: each block
    of in / groups channels projects to out / groups channels."""

    def __init__(self, size_in: int, size_out: int, groups: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([size_out, size_in // groups, 1], dtype)
        self.bias = nn.Parameter([size_out], dtype)
        self.groups, self.size_in, self.size_out = groups, size_in, size_out

    def forward(self, op, x):
        g = self.groups
        # [out, in / g, 1] -> [g, in / g, out / g]
        blocks = op.Transpose(op.Reshape(self.weight, [g, self.size_out // g, -1]), perm=[0, 2, 1])
        if g == 1:
            y = op.MatMul(x, op.Squeeze(blocks, [0]))
        else:
            grouped = op.Transpose(op.Reshape(x, [0, 0, g, -1]), perm=[0, 2, 1, 3])
            y = op.MatMul(grouped, blocks)  # [batch, g, seq, out / g]
            y = op.Reshape(op.Transpose(y, perm=[0, 2, 1, 3]), [0, 0, self.size_out])
        return op.Add(y, self.bias)


class ConvNorm(nn.Module):
    """layernorm(conv1d(x) + residual)."""

    def __init__(self, size_in: int, size_out: int, groups: int, dtype: ir.DataType):
        super().__init__()
        self.conv1d = PointwiseConv(size_in, size_out, groups, dtype)
        self.layernorm = LayerNorm(size_out, LAYER_NORM_EPS, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, residual):
        return self.layernorm(op, op.Add(self.conv1d(op, x), residual))


class ConvActivation(nn.Module):
    def __init__(self, size_in: int, size_out: int, groups: int, act: str, dtype: ir.DataType):
        super().__init__()
        self.conv1d = PointwiseConv(size_in, size_out, groups, dtype)
        self.act = act

    def forward(self, op, x):
        return activation(op, self.act, self.conv1d(op, x))


class SelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, groups = cfg.hidden_size, cfg.extra["groups"]
        self.query = PointwiseConv(size, size, groups["q_groups"], dtype)
        self.key = PointwiseConv(size, size, groups["k_groups"], dtype)
        self.value = PointwiseConv(size, size, groups["v_groups"], dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel):
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        return kernel(op, q, k, v, self.heads, self.scale)


class SqueezeBertModule(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, inner, groups = cfg.hidden_size, cfg.intermediate_size, cfg.extra["groups"]
        self.attention = SelfAttention(cfg, dtype)
        self.post_attention = ConvNorm(size, size, groups["post_attention_groups"], dtype)
        self.intermediate = ConvActivation(
            size, inner, groups["intermediate_groups"], cfg.activation, dtype
        )
        self.output = ConvNorm(inner, size, groups["output_groups"], dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, kernel):
        x = self.post_attention(op, self.attention(op, x, kernel), x)
        return self.output(op, self.intermediate(op, x), x)


class Encoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        layers = [SqueezeBertModule(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        self.layers = nn.ModuleList(layers)

    def forward(self, op, x, kernel):
        for layer in self.layers:
            x = layer(op, x, kernel)
        return x


class Body(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)
        self.pooler = Pooler(cfg, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        hidden = self.encoder(op, self.embeddings(op, inputs), kernel)
        return hidden, None if self.pooler is None else self.pooler(op, hidden)


class SqueezeBertModel(BertEncoderModel):
    body_cls = Body
    body_name = "transformer"

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.cls = BertPredictions(cfg, dtype, cfg.extra["tied"], decoder_bias=True)
        else:
            super().make_head(cfg, dtype, task, tensors)


class SqueezeBertRules(EncoderRules):
    def read_extra(self, r: ConfigReader) -> dict:
        hidden, inner = r.int("hidden_size"), r.int("intermediate_size")
        if r.int("embedding_size", default=hidden) != hidden:
            r.refuse("embedding_size", "transformers requires it to equal hidden_size")
        groups = {key: r.int(key, default=1) for key in GROUP_KEYS}
        for key, value in groups.items():
            if hidden % value or (
                key in ("intermediate_groups", "output_groups") and inner % value
            ):
                r.refuse(key, "it must divide the channels it groups")
        return {"groups": groups, "tied": r.bool("tie_word_embeddings", True)}


FAMILIES = [
    Family(
        "squeezebert",
        SqueezeBertModel,
        "BERT with grouped pointwise convolutions as its projections",
        ("squeezebert/squeezebert-uncased", "squeezebert/squeezebert-mnli"),
        rules=SqueezeBertRules(),
        task="feature-extraction",
        category="encoder",
        # buffers, a pooler a head does not read, a tied decoder's stored copies and the bias
        # an untied one replaces
        unused=(
            r"(transformer\.)?embeddings\.position_ids",
            r"(transformer\.)?pooler\..*",
            r"cls\.predictions\.decoder\..*",
            r"cls\.predictions\.bias",
        ),
        prefix="transformer.",
    ),
]

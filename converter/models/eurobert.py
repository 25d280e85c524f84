"""EuroBERT: Llama's pre-norm layers (RMSNorm, rotary q/k, grouped key/value heads, SwiGLU) run
bidirectionally over the padding mask, a final `model.norm`; `lm_head` (with a bias under
mlp_bias, tied only under tie_word_embeddings); the classifier is dense, GELU and `classifier`,
pooled from the first token (bos), the mean of the unpadded tokens (mean) or, `late`, the mean
of every unpadded token's logits."""

from __future__ import annotations

from dataclasses import dataclass, fields

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, RMSNorm, activation
from converter.components.attention import Rotary
from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Bias
from converter.config import FULL, Rope, parse_rope
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEncoderModel, Table
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs


@dataclass(frozen=True)
class LlamaEncoderConfig(EncoderConfig):
    kv_heads: int = 1
    attention_bias: bool = False
    mlp_bias: bool = False
    rope: Rope | None = None
    tied: bool = False  # tie_word_embeddings
    classifier_pooling: str = "late"


def repeat_heads(op, x, kv_heads: int, heads: int, head_dim: int):
    """[batch, seq, kv_heads * head_dim] -> [batch, seq, heads * head_dim], each key/value head
    serving heads / kv_heads query heads in turn (transformers' repeat_kv)."""
    if kv_heads == heads:
        return x
    grouped = op.Unsqueeze(op.Reshape(x, [0, 0, kv_heads, head_dim]), [3])
    shape = op.Concat(op.Shape(x, start=0, end=2), [kv_heads, heads // kv_heads, head_dim], axis=0)
    return op.Reshape(op.Expand(grouped, shape), [0, 0, heads * head_dim])


class LlamaEncoderAttention(nn.Module):
    def __init__(self, cfg: LlamaEncoderConfig, dtype: ir.DataType, rope: Rope):
        super().__init__()
        size, bias, kv = cfg.hidden_size, cfg.attention_bias, cfg.kv_heads * cfg.head_dim
        self.q_proj = Linear(size, size, bias, dtype)
        self.k_proj = Linear(size, kv, bias, dtype)
        self.v_proj = Linear(size, kv, bias, dtype)
        self.o_proj = Linear(size, size, bias, dtype)
        self.heads, self.kv_heads, self.head_dim = (
            cfg.num_attention_heads,
            cfg.kv_heads,
            cfg.head_dim,
        )
        self.scale, self.rope = cfg.head_dim**-0.5, rope

    def forward(self, op, x, kernel, rotary, bias=None):
        q = rotary(op, self.q_proj(op, x), self.heads, self.rope)
        k = rotary(op, self.k_proj(op, x), self.kv_heads, self.rope)
        k = repeat_heads(op, k, self.kv_heads, self.heads, self.head_dim)
        v = repeat_heads(op, self.v_proj(op, x), self.kv_heads, self.heads, self.head_dim)
        return self.o_proj(op, kernel(op, q, k, v, self.heads, self.scale, bias))


class SwiGLU(nn.Module):
    def __init__(self, cfg: LlamaEncoderConfig, dtype: ir.DataType):
        super().__init__()
        hidden, inner, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.gate_proj = Linear(hidden, inner, bias, dtype)
        self.up_proj = Linear(hidden, inner, bias, dtype)
        self.down_proj = Linear(inner, hidden, bias, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        gate = activation(op, self.act, self.gate_proj(op, x))
        return self.down_proj(op, op.Mul(gate, self.up_proj(op, x)))


class LlamaEncoderLayer(nn.Module):
    """`attention_cls` and `make_norm` may differ (ESM-C: q/k norms, LayerNorm)."""

    attention_cls: type[nn.Module] = LlamaEncoderAttention

    def __init__(self, cfg: LlamaEncoderConfig, dtype: ir.DataType, index: int):
        super().__init__()
        self.first = index == 0
        self.input_layernorm = self.make_norm(cfg, dtype)
        self.self_attn = self.attention_cls(cfg, dtype, self.rope_of(cfg, index))
        self.post_attention_layernorm = self.make_norm(cfg, dtype)
        self.mlp = SwiGLU(cfg, dtype)

    def make_norm(self, cfg: LlamaEncoderConfig, dtype: ir.DataType) -> nn.Module:
        return RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def rope_of(self, cfg: LlamaEncoderConfig, index: int) -> Rope:
        return cfg.rope

    def expected_fusions(self, plan) -> dict[str, int]:
        # the input norm reads the previous layer's sum (the first reads the embeddings)
        return {
            "skip_norms": 1 + int(not self.first) if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, rotary, bias=None):
        x = op.Add(x, self.self_attn(op, self.input_layernorm(op, x), kernel, rotary, bias))
        return op.Add(x, self.mlp(op, self.post_attention_layernorm(op, x)))


class LlamaEncoderBody(nn.Module):
    """`embed_tokens`, the layers, the final `norm`."""

    layer_cls = LlamaEncoderLayer

    def __init__(self, cfg: LlamaEncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embed_tokens = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        self.layers = nn.ModuleList(
            [self.layer_cls(cfg, dtype, i) for i in range(cfg.num_hidden_layers)]
        )
        self.norm = self.make_final_norm(cfg, dtype)
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def make_final_norm(self, cfg: LlamaEncoderConfig, dtype: ir.DataType) -> nn.Module:
        return RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}  # the final norm reads a sum

    def layer_biases(self, op, ids) -> list:
        """Each layer's attention bias (None: the padding mask alone)."""
        return [None] * len(self.layers)

    def forward(self, op, inputs: TextInputs):
        return self.encode(op, inputs, self.embed_tokens(op, inputs.input_ids))

    def encode(self, op, inputs: TextInputs, x):
        """The layers and the final norm over embeddings `x` (UltraVBERT's hold images)."""
        ids = inputs.input_ids
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        length = op.Squeeze(op.Shape(ids, start=1, end=2), [0])
        rotary = Rotary(
            self.dtype, op.Expand(op.Unsqueeze(op.Range(0, length, 1), [0]), op.Shape(ids))
        )
        for layer, bias in zip(self.layers, self.layer_biases(op, ids), strict=True):
            x = layer(op, x, kernel, rotary, bias)
        return self.norm(op, x), None


def pool(op, hidden, attention_mask, how: str, dtype: ir.DataType):
    """The first token (bos, cls) or the mean over unpadded tokens (mean, late) of [batch,
    seq, any]."""
    if how in ("bos", "cls"):
        return op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
    keep = op.Unsqueeze(op.Cast(attention_mask, to=dtype), [2])
    total = op.ReduceSum(op.Mul(hidden, keep), [1], keepdims=0)
    return op.Div(total, op.ReduceSum(keep, [1], keepdims=0))


class EuroBertModel(BertEncoderModel):
    body_cls = LlamaEncoderBody
    body_name = "model"
    heads = ("feature-extraction", "fill-mask", "text-classification", "token-classification")

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg: LlamaEncoderConfig, dtype, task: str, tensors) -> None:
        size = cfg.hidden_size
        if task == "fill-mask":
            if cfg.tied:  # the token table, and a bias of its own under mlp_bias
                self.lm_head = Bias(cfg.vocab_size, dtype) if cfg.mlp_bias else None
            else:
                self.lm_head = Linear(size, cfg.vocab_size, cfg.mlp_bias, dtype, head=True)
            return
        if task == "text-classification":
            self.dense = Linear(size, size, True, dtype)
        if task in ("text-classification", "token-classification"):
            self.classifier = Linear(size, cfg.num_labels, True, dtype)

    def word_table(self):
        return self.body.embed_tokens.weight

    def forward(self, op, inputs: TextInputs) -> dict:
        hidden, _ = self.body(op, inputs)
        cfg, tokens = self.cfg, [BATCH, SEQUENCE]
        if self.task == "feature-extraction":
            return {"last_hidden_state": (hidden, [*tokens, cfg.hidden_size])}
        if self.task == "fill-mask":
            if cfg.tied:
                logits = op.MatMul(hidden, op.Transpose(self.word_table(), perm=[1, 0]))
                logits = logits if self.lm_head is None else self.lm_head(op, logits)
            else:
                logits = self.lm_head(op, hidden)
            return {"logits": (logits, [*tokens, cfg.vocab_size])}
        if self.task == "token-classification":
            return {"logits": (self.classifier(op, hidden), [*tokens, cfg.num_labels])}
        how, mask, dtype = cfg.classifier_pooling, inputs.attention_mask, self.body.dtype
        if how == "late":  # every token's logits, then their mean
            x = self.classifier(op, op.Gelu(self.dense(op, hidden)))
            logits = pool(op, x, mask, how, dtype)
        else:
            x = op.Gelu(self.dense(op, pool(op, hidden, mask, how, dtype)))
            logits = self.classifier(op, x)
        return {"logits": (logits, [BATCH, cfg.num_labels])}


class LlamaEncoderRules(EncoderRules):
    poolings = ("bos", "mean", "late")

    def __init__(self):
        super().__init__(aliases={"rms_norm_eps": "layer_norm_eps"}, token_types=False)

    def read(self, r: ConfigReader) -> LlamaEncoderConfig:
        base = super().read(r)
        if r.has("head_dim") and r.int("head_dim") != base.head_dim:
            r.refuse("head_dim", "heads are hidden_size / num_attention_heads wide here")
        heads = base.num_attention_heads
        kv_heads = r.int("num_key_value_heads", default=heads)
        if heads % kv_heads:
            r.refuse("num_key_value_heads", f"it must divide num_attention_heads ({heads})")
        pooling = r.str("classifier_pooling", default=self.poolings[-1])
        if pooling not in self.poolings:
            r.refuse("classifier_pooling", f"pooling is one of {', '.join(self.poolings)}")
        if r.int("pretraining_tp", default=1) != 1:
            r.refuse("pretraining_tp", "tensor-parallel slicing of the MLP is not built")
        return LlamaEncoderConfig(
            **{f.name: getattr(base, f.name) for f in fields(EncoderConfig)},
            kv_heads=kv_heads,
            attention_bias=r.bool("attention_bias", False),
            mlp_bias=r.bool("mlp_bias", False),
            rope=self.read_rope(r, base.head_dim),
            tied=r.bool("tie_word_embeddings", False),
            classifier_pooling=pooling,
        )

    def read_rope(self, r: ConfigReader, head_dim: int) -> Rope:
        return parse_rope(r.raw, head_dim=head_dim, layer_type=FULL)


FAMILIES = [
    Family(
        "eurobert",
        EuroBertModel,
        "Llama's pre-norm layers (RMSNorm, rotary, GQA, SwiGLU) run bidirectionally",
        ("EuroBERT/EuroBERT-210m", "EuroBERT/EuroBERT-610m"),
        rules=LlamaEncoderRules(),
        task="feature-extraction",
        category="encoder",
        prefix="model.",
        unused=(r"lm_head\.weight",),  # a tied head's stored copy of the token table
    ),
]

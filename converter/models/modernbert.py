"""ModernBERT (the encoder; the decoder is `modernbert-decoder`): pre-norm layers without
biases by default, a normed embedding, no attention norm in the first layer, packed `Wqkv`
(q | k | v), rotary positions with one base for global layers and another for local ones, local
layers seeing keys within local_attention // 2 tokens either side, GeGLU MLPs and a final norm.
Every head first runs `head` (dense, act, norm). transformers' unpadding is an implementation
detail: padded rows give the same numbers."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.attention import Rotary
from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Bias
from converter.config import FULL, SLIDING, Rope, parse_local_rope, parse_rope
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.dtypes import NUMPY_OF
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEncoderModel, Table, span_logits
from converter.models.modernbert_decoder import GeGLU
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs


@dataclass(frozen=True)
class ModernBertConfig(EncoderConfig):
    norm_bias: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    window: int = 64  # local layers see keys at most this many tokens away
    sliding: tuple[bool, ...] = ()  # per layer: local attention
    rope: Rope | None = None  # global layers
    local_rope: Rope | None = None
    classifier_bias: bool = False
    classifier_activation: str = "gelu"
    classifier_pooling: str = "cls"
    decoder_bias: bool = True
    tie_word_embeddings: bool = True


def _norm(cfg: ModernBertConfig, dtype: ir.DataType) -> LayerNorm:
    return LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype, bias=cfg.norm_bias)


class ModernBertAttention(nn.Module):
    def __init__(self, cfg: ModernBertConfig, index: int, dtype: ir.DataType):
        super().__init__()
        size, bias = cfg.hidden_size, cfg.attention_bias
        self.Wqkv = Linear(size, 3 * size, bias, dtype)
        self.Wo = Linear(size, size, bias, dtype)
        self.sliding = cfg.sliding[index]
        self.rope = cfg.local_rope if self.sliding else cfg.rope
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel, rotary, window_bias):
        q, k, v = op.Split(self.Wqkv(op, x), axis=-1, num_outputs=3, _outputs=3)
        q, k = rotary(op, q, self.heads, self.rope), rotary(op, k, self.heads, self.rope)
        bias = window_bias if self.sliding else None
        return self.Wo(op, kernel(op, q, k, v, self.heads, self.scale, bias))


class ModernBertEncoderLayer(nn.Module):
    def __init__(self, cfg: ModernBertConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.first = index == 0  # reads the normed embeddings: no norm of its own
        self.attn_norm = None if self.first else _norm(cfg, dtype)
        self.attn = ModernBertAttention(cfg, index, dtype)
        self.mlp_norm = _norm(cfg, dtype)
        self.mlp = GeGLU(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # mlp_norm reads a residual sum, and so does attn_norm (the previous layer's output)
        return {
            "skip_norms": 1 + int(not self.first) if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, rotary, window_bias):
        h = x if self.first else self.attn_norm(op, x)
        x = op.Add(x, self.attn(op, h, kernel, rotary, window_bias))
        return op.Add(x, self.mlp(op, self.mlp_norm(op, x)))


class ModernBertEmbeddings(nn.Module):
    def __init__(self, cfg: ModernBertConfig, dtype: ir.DataType):
        super().__init__()
        self.tok_embeddings = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        self.norm = _norm(cfg, dtype)

    def forward(self, op, input_ids):
        return self.norm(op, self.tok_embeddings(op, input_ids))


def window_bias(op, input_ids, window: int, dtype: ir.DataType):
    """0 where |query - key| <= window, else the dtype's lowest value: [1, 1, seq, seq]."""
    length = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
    steps = op.Range(0, length, 1)
    distance = op.Abs(op.Sub(op.Unsqueeze(steps, [1]), op.Unsqueeze(steps, [0])))
    numpy_type = NUMPY_OF[dtype]
    zero = op.Constant(value=ir.tensor(np.zeros([], numpy_type)))
    low = op.Constant(value=ir.tensor(np.array(np.finfo(numpy_type).min, numpy_type)))
    bias = op.Where(op.LessOrEqual(distance, window), zero, low)
    return op.Unsqueeze(bias, [0, 1])


class ModernBertBody(nn.Module):
    def __init__(self, cfg: ModernBertConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = ModernBertEmbeddings(cfg, dtype)
        self.layers = nn.ModuleList(
            [ModernBertEncoderLayer(cfg, i, dtype) for i in range(cfg.num_hidden_layers)]
        )
        self.final_norm = _norm(cfg, dtype)
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}  # the final norm reads a sum

    def forward(self, op, inputs: TextInputs):
        return self.encode(op, inputs, self.embeddings(op, inputs.input_ids))

    def encode(self, op, inputs: TextInputs, x):
        """The layers and the final norm over the normed embeddings `x`."""
        ids = inputs.input_ids
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        length = op.Squeeze(op.Shape(ids, start=1, end=2), [0])
        positions = op.Expand(op.Unsqueeze(op.Range(0, length, 1), [0]), op.Shape(ids))
        rotary = Rotary(self.dtype, positions)
        local = window_bias(op, ids, self.cfg.window, self.dtype) if any(self.cfg.sliding) else None
        for layer in self.layers:
            x = layer(op, x, kernel, rotary, local)
        return self.final_norm(op, x), None


class PredictionHead(nn.Module):
    """norm(act(dense(x))), what every ModernBERT head runs first."""

    def __init__(self, cfg: ModernBertConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, cfg.classifier_bias, dtype)
        self.norm = _norm(cfg, dtype)
        self.act = cfg.classifier_activation

    def forward(self, op, x):
        return self.norm(op, activation(op, self.act, self.dense(op, x)))


class ModernBertModel(BertEncoderModel):
    body_cls = ModernBertBody
    body_name = "model"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg: ModernBertConfig, dtype, task: str, tensors) -> None:
        if task == "feature-extraction":
            return
        self.head = PredictionHead(cfg, dtype)
        if task == "fill-mask":
            self.tied = cfg.tie_word_embeddings
            if not self.tied:
                size, vocab = cfg.hidden_size, cfg.vocab_size
                self.decoder = Linear(size, vocab, cfg.decoder_bias, dtype, head=True)
            else:  # the token table, and its own bias (decoder_bias)
                self.decoder = Bias(cfg.vocab_size, dtype) if cfg.decoder_bias else None
            return
        if task == "question-answering" and cfg.num_labels != 2:
            raise ConfigError(
                f"ModernBERT's question-answering head splits its {cfg.num_labels} labels into "
                "start and end logits: it needs num_labels = 2"
            )
        self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def head_outputs(self, op, hidden, pooled) -> dict:
        cfg, task, tokens = self.cfg, self.task, [BATCH, SEQUENCE]
        if task == "feature-extraction":
            return {"last_hidden_state": (hidden, [*tokens, cfg.hidden_size])}
        if task == "fill-mask":
            return {
                "logits": (self.mlm_logits(op, self.head(op, hidden)), [*tokens, cfg.vocab_size])
            }
        if task == "text-classification":
            return {"logits": (self.classifier(op, pooled), [BATCH, cfg.num_labels])}
        logits = self.classifier(op, self.head(op, hidden))
        if task == "token-classification":
            return {"logits": (logits, [*tokens, cfg.num_labels])}
        return span_logits(op, logits, tokens)

    def word_table(self):
        return self.body.embeddings.tok_embeddings.weight

    def mlm_logits(self, op, x):
        if not self.tied:
            return self.decoder(op, x)
        logits = op.MatMul(x, op.Transpose(self.word_table(), perm=[1, 0]))
        return logits if self.decoder is None else self.decoder(op, logits)

    def forward(self, op, inputs: TextInputs) -> dict:
        hidden, _ = self.body(op, inputs)
        pooled = None
        if self.task == "text-classification":
            pooled = self.head(op, self.pool(op, hidden, inputs.attention_mask))
        return self.head_outputs(op, hidden, pooled)

    def pool(self, op, hidden, attention_mask):
        """The first token (classifier_pooling cls), or the mean over unpadded tokens."""
        if self.cfg.classifier_pooling == "cls":
            return op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
        keep = op.Unsqueeze(op.Cast(attention_mask, to=self.body.dtype), [2])
        total = op.ReduceSum(op.Mul(hidden, keep), [1], keepdims=0)
        return op.Div(total, op.ReduceSum(keep, [1], keepdims=0))


class ModernBertRules(EncoderRules):
    def __init__(self):
        super().__init__(
            aliases={"hidden_activation": "hidden_act", "norm_eps": "layer_norm_eps"},
            token_types=False,
        )

    def read(self, r: ConfigReader) -> ModernBertConfig:
        # older configs: one rope base per layer type
        r.alias(global_rope_theta="rope_theta", local_rope_theta="rope_local_base_freq")
        base = super().read(r)
        head_dim = base.head_dim
        rope = parse_rope(r.raw, head_dim=head_dim, layer_type=FULL)
        if isinstance(r.raw.get("rope_parameters"), dict) and not r.raw.get("rope_scaling"):
            local_rope = parse_local_rope(r.raw, head_dim=head_dim)
        else:  # transformers applies rope_scaling to the local layers too, at their own base
            local = {**r.raw, "rope_theta": r.float("rope_local_base_freq")}
            local_rope = parse_rope(local, head_dim=head_dim)
        # a sliding_window key sets local_attention to twice it (a property in transformers)
        window = r.int("sliding_window") if r.has("sliding_window") else None
        window = r.int("local_attention") // 2 if window is None else window
        pooling = r.str("classifier_pooling", default="cls")
        if pooling not in ("cls", "mean"):
            r.refuse("classifier_pooling", "pooling is cls or mean")
        return ModernBertConfig(
            **{f.name: getattr(base, f.name) for f in fields(EncoderConfig)},
            norm_bias=r.bool("norm_bias", False),
            attention_bias=r.bool("attention_bias", False),
            mlp_bias=r.bool("mlp_bias", False),
            window=window,
            sliding=_sliding_layers(r, base.num_hidden_layers),
            rope=rope,
            local_rope=local_rope or rope,
            classifier_bias=r.bool("classifier_bias", False),
            classifier_activation=r.str("classifier_activation", default="gelu"),
            classifier_pooling=pooling,
            decoder_bias=r.bool("decoder_bias", True),
            tie_word_embeddings=r.bool("tie_word_embeddings", True),
        )


def _sliding_layers(r: ConfigReader, layers: int) -> tuple[bool, ...]:
    types = r.raw.get("layer_types")
    if types is None:
        every = r.int("global_attn_every_n_layers", default=3)
        return tuple(bool(i % every) for i in range(layers))
    if not isinstance(types, list) or len(types) != layers or set(types) - {FULL, SLIDING}:
        raise ConfigError(
            f"'layer_types' must name {FULL} or {SLIDING} for each of the {layers} layers"
        )
    return tuple(t == SLIDING for t in types)


FAMILIES = [
    Family(
        "modernbert",
        ModernBertModel,
        "pre-norm GeGLU encoder, rotary with global/local bases, alternating local windows",
        ("answerdotai/ModernBERT-base", "Alibaba-NLP/gte-modernbert-base"),
        rules=ModernBertRules(),
        task="feature-extraction",
        category="encoder",
        prefix="model.",
        unused=(r"decoder\.weight",),  # a tied decoder's copy of the table, where stored
    ),
]

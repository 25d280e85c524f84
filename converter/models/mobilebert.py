"""MobileBERT: BERT with bottlenecks. Narrow word vectors (embedding_size), concatenated with
their neighbours' (trigram_input) and mapped up by `embedding_transformation`; each layer runs
attention and its MLPs at intra_bottleneck_size (the layer input projected down by
`bottleneck.input`, queries and keys by `bottleneck.attention` when key_query_shared_bottleneck),
extra MLPs (`ffn`, num_feedforward_networks - 1 of them) before the last, whose output is mapped
back up and added to the layer input. Norms are LayerNorm or, under no_norm, a scale and shift
(`NoNorm`); the embedding norm and each layer's last MLP norm keep torch's default eps. The
masked-LM head multiplies by the word table and `dense` stacked (the hidden size is wider)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import MAX_DIM, MAX_LAYERS, ConfigReader
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEncoderModel, PredictionTransform, Table
from converter.registry import Family
from converter.tasks.encoding import TextInputs

TORCH_EPS = 1e-5  # nn.LayerNorm's default, where transformers passes no eps


@dataclass(frozen=True)
class Bottlenecks:
    """MobileBERT's own settings (`cfg.extra["mobilebert"]`)."""

    inner: int  # the width attention and the MLPs run at (true_hidden_size)
    bottleneck: bool  # use_bottleneck
    shared: bool  # key_query_shared_bottleneck
    attention: bool  # use_bottleneck_attention: q, k and v all read the bottleneck
    ffns: int  # num_feedforward_networks
    layer_norm: bool  # normalization_type layer_norm (else no_norm)
    trigram: bool
    pooler_activation: bool  # classifier_activation
    tied: bool


class NoNorm(nn.Module):
    def __init__(self, size: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([size], dtype)
        self.bias = nn.Parameter([size], dtype)

    def forward(self, op, x):
        return op.Add(op.Mul(x, self.weight), self.bias)


def norm(cfg: EncoderConfig, size: int, dtype: ir.DataType, eps: float | None = None):
    """The configured norm; `eps` None: torch's default, as where transformers passes none."""
    if cfg.extra["mobilebert"].layer_norm:
        return LayerNorm(size, TORCH_EPS if eps is None else eps, dtype)
    return NoNorm(size, dtype)


def skip_norms(cfg: EncoderConfig, plan, count: int) -> dict[str, int]:
    """`count` norms reading a residual sum fuse, when they are LayerNorms."""
    fused = plan.has(SKIP_NORM) and cfg.extra["mobilebert"].layer_norm
    return {"skip_norms": count if fused else 0}


class DenseNorm(nn.Module):
    """norm(dense(x) + residual)."""

    def __init__(self, cfg, size_in: int, size: int, dtype: ir.DataType, eps: float | None):
        super().__init__()
        self.dense = Linear(size_in, size, True, dtype)
        self.LayerNorm = norm(cfg, size, dtype, eps)
        self.cfg = cfg

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(self.cfg, plan, 1)

    def forward(self, op, x, residual):
        return self.LayerNorm(op, op.Add(self.dense(op, x), residual))


class Dense(nn.Module):
    """dense then act (BERT's intermediate)."""

    def __init__(self, size_in: int, size: int, act: str, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(size_in, size, True, dtype)
        self.act = act

    def forward(self, op, x):
        return activation(op, self.act, self.dense(op, x))


class BottleneckLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.extra["mobilebert"].inner, True, dtype)
        self.LayerNorm = norm(cfg, cfg.extra["mobilebert"].inner, dtype, cfg.norm_eps)

    def forward(self, op, x):
        return self.LayerNorm(op, self.dense(op, x))


class Bottleneck(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Bottlenecks = cfg.extra["mobilebert"]
        self.input = BottleneckLayer(cfg, dtype)
        self.attention = BottleneckLayer(cfg, dtype) if s.shared else None
        self.s = s

    def forward(self, op, x):
        """query, key and value inputs, and the attention's residual."""
        inner = self.input(op, x)
        if self.s.attention:
            return inner, inner, inner, inner
        if self.attention is not None:
            shared = self.attention(op, x)
            return shared, shared, x, inner
        return x, x, x, inner


class SelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Bottlenecks = cfg.extra["mobilebert"]
        self.query = Linear(s.inner, s.inner, True, dtype)
        self.key = Linear(s.inner, s.inner, True, dtype)
        self.value = Linear(s.inner if s.attention else cfg.hidden_size, s.inner, True, dtype)
        self.heads = cfg.num_attention_heads
        self.scale = (s.inner // self.heads) ** -0.5

    def forward(self, op, q, k, v, kernel):
        q, k, v = self.query(op, q), self.key(op, k), self.value(op, v)
        return kernel(op, q, k, v, self.heads, self.scale)


class Attention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        inner = cfg.extra["mobilebert"].inner
        setattr(self, "self", SelfAttention(cfg, dtype))  # noqa: B010 (the checkpoint's name)
        self.output = DenseNorm(cfg, inner, inner, dtype, cfg.norm_eps)

    def forward(self, op, q, k, v, residual, kernel):
        return self.output(op, self.self(op, q, k, v, kernel), residual)


class FFNLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        inner = cfg.extra["mobilebert"].inner
        self.intermediate = Dense(inner, cfg.intermediate_size, cfg.activation, dtype)
        self.output = DenseNorm(cfg, cfg.intermediate_size, inner, dtype, cfg.norm_eps)

    def forward(self, op, x):
        return self.output(op, self.intermediate(op, x), x)


class Output(nn.Module):
    """The last MLP's dense and norm (torch's eps), then, with bottlenecks, back up to the
    hidden size and added to the layer input."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Bottlenecks = cfg.extra["mobilebert"]
        self.dense = Linear(cfg.intermediate_size, s.inner, True, dtype)
        self.LayerNorm = norm(cfg, s.inner, dtype)
        self.bottleneck = (
            DenseNorm(cfg, s.inner, cfg.hidden_size, dtype, cfg.norm_eps) if s.bottleneck else None
        )
        self.cfg = cfg

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(self.cfg, plan, 1)

    def forward(self, op, x, residual, layer_input):
        x = self.LayerNorm(op, op.Add(self.dense(op, x), residual))
        return x if self.bottleneck is None else self.bottleneck(op, x, layer_input)


class MobileBertLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Bottlenecks = cfg.extra["mobilebert"]
        self.attention = Attention(cfg, dtype)
        self.intermediate = Dense(s.inner, cfg.intermediate_size, cfg.activation, dtype)
        self.output = Output(cfg, dtype)
        self.bottleneck = Bottleneck(cfg, dtype) if s.bottleneck else None
        extra = [FFNLayer(cfg, dtype) for _ in range(s.ffns - 1)]
        self.ffn = nn.ModuleList(extra) if extra else None

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0}

    def forward(self, op, x, kernel):
        if self.bottleneck is None:
            q = k = v = residual = x
        else:
            q, k, v, residual = self.bottleneck(op, x)
        h = self.attention(op, q, k, v, residual, kernel)
        for ffn in self.ffn or ():
            h = ffn(op, h)
        return self.output(op, self.intermediate(op, h), h, x)


class Encoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        layers = [MobileBertLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        self.layer = nn.ModuleList(layers)

    def forward(self, op, x, kernel):
        for layer in self.layer:
            x = layer(op, x, kernel)
        return x


class Embeddings(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Bottlenecks = cfg.extra["mobilebert"]
        width, size = cfg.embedding_size, cfg.hidden_size
        self.word_embeddings = Table(cfg.vocab_size, width, dtype)
        self.position_embeddings = Table(cfg.max_position_embeddings, size, dtype)
        self.token_type_embeddings = Table(cfg.type_vocab_size, size, dtype)
        mapped = s.trigram or width != size
        self.embedding_transformation = (
            Linear(width * (3 if s.trigram else 1), size, True, dtype) if mapped else None
        )
        self.LayerNorm = norm(cfg, size, dtype)
        self.cfg, self.trigram = cfg, s.trigram

    def expected_fusions(self, plan) -> dict[str, int]:
        return skip_norms(self.cfg, plan, 1)

    def forward(self, op, inputs: TextInputs):
        x = self.word_embeddings(op, inputs.input_ids)
        if self.trigram:  # each token's next, itself, its previous (zeros past the ends)
            after = op.Pad(op.Slice(x, [1], [2**62], [1]), [0, 0, 0, 0, 1, 0])
            before = op.Pad(op.Slice(x, [0], [-1], [1]), [0, 1, 0, 0, 0, 0])
            x = op.Concat(after, x, before, axis=2)
        if self.embedding_transformation is not None:
            x = self.embedding_transformation(op, x)
        positions = op.Unsqueeze(
            op.Range(0, op.Squeeze(op.Shape(inputs.input_ids, start=1, end=2), [0]), 1), [0]
        )
        x = op.Add(x, self.position_embeddings(op, positions))
        x = op.Add(x, self.token_type_embeddings(op, inputs.token_type_ids))
        return self.LayerNorm(op, x)


class Pooler(nn.Module):
    """tanh(dense(first token)), or the first token alone without classifier_activation."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        active = cfg.extra["mobilebert"].pooler_activation
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype) if active else None

    def forward(self, op, hidden):
        first = op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
        return first if self.dense is None else op.Tanh(self.dense(op, first))


class Body(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = Embeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)
        self.pooler = Pooler(cfg, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        hidden = self.encoder(op, self.embeddings(op, inputs), kernel)
        return hidden, None if self.pooler is None else self.pooler(op, hidden)


class Projection(nn.Module):
    """x times `weight` [in, out] as stored (no transpose): part of the LM head, so float under
    int8, and int4 at --int4-head-bits."""

    def __init__(self, rows: int, columns: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([rows, columns], dtype)
        self.head = True

    def expected_fusions(self, plan) -> dict[str, int]:
        return plan.quantized_matmuls(head=True)

    def forward(self, op, x):
        return op.MatMul(x, self.weight)


class LMPrediction(nn.Module):
    """transform, then times [word table^T; dense] plus the decoder's bias (`bias` when tied):
    the first embedding_size columns meet the table (or the untied `decoder`), the rest
    `dense`, stored as [hidden - embedding_size, vocab]."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        tied, width = cfg.extra["mobilebert"].tied, cfg.embedding_size
        square = dataclasses.replace(cfg, embedding_size=cfg.hidden_size)
        self.transform = PredictionTransform(square, dtype)
        self.dense = Projection(cfg.hidden_size - width, cfg.vocab_size, dtype)
        self.decoder = None if tied else Linear(width, cfg.vocab_size, True, dtype, head=True)
        self.bias = nn.Parameter([cfg.vocab_size], dtype) if tied else None
        self.width = width

    def forward(self, op, hidden, table):
        x = self.transform(op, hidden)
        narrow = op.Slice(x, [0], [self.width], [2])
        rest = self.dense(op, op.Slice(x, [self.width], [2**62], [2]))
        if self.decoder is not None:
            return op.Add(self.decoder(op, narrow), rest)
        words = op.MatMul(narrow, op.Transpose(table, perm=[1, 0]))
        return op.Add(op.Add(words, rest), self.bias)


class MLMHead(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.predictions = LMPrediction(cfg, dtype)

    def forward(self, op, hidden, table):
        return self.predictions(op, hidden, table)


class MobileBertModel(BertEncoderModel):
    body_cls = Body
    body_name = "mobilebert"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        if task == "text-classification":
            return True
        active = self.cfg.extra["mobilebert"].pooler_activation
        return task == "feature-extraction" and active and self.has(tensors, "pooler.dense.weight")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.cls = MLMHead(cfg, dtype)
        elif task == "question-answering":
            self.qa_outputs = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)


class MobileBertRules(EncoderRules):
    def read_extra(self, r: ConfigReader) -> dict:
        bottleneck = r.bool("use_bottleneck", True)
        hidden = r.int("hidden_size")
        inner = r.int("intra_bottleneck_size", default=128, hi=MAX_DIM) if bottleneck else hidden
        if inner % r.int("num_attention_heads"):
            r.refuse("intra_bottleneck_size", "attention heads must divide it")
        kind = r.str("normalization_type", default="no_norm")
        if kind not in ("layer_norm", "no_norm"):
            r.refuse("normalization_type", "it is layer_norm or no_norm")
        if r.int("embedding_size", default=128) > hidden:
            r.refuse("embedding_size", "the masked-LM head stacks hidden - embedding_size rows")
        settings = Bottlenecks(
            inner=inner,
            bottleneck=bottleneck,
            shared=r.bool("key_query_shared_bottleneck", True),
            attention=r.bool("use_bottleneck_attention", False),
            ffns=r.int("num_feedforward_networks", default=4, hi=MAX_LAYERS),
            layer_norm=kind == "layer_norm",
            trigram=r.bool("trigram_input", True),
            pooler_activation=r.bool("classifier_activation", True),
            tied=r.bool("tie_word_embeddings", True),
        )
        return {"mobilebert": settings}


FAMILIES = [
    Family(
        "mobilebert",
        MobileBertModel,
        "bottlenecked BERT: trigram embeddings, stacked MLPs, NoNorm scale-and-shift",
        ("google/mobilebert-uncased",),
        rules=MobileBertRules(),
        task="feature-extraction",
        category="encoder",
        # buffers, the next-sentence head, a pooler a head does not read, an embedding mapping
        # left unused when words are already hidden-wide, a tied decoder's stored copies and the
        # bias an untied one replaces
        unused=(
            r"(mobilebert\.)?embeddings\.position_ids",
            r"cls\.seq_relationship\..*",
            r"(mobilebert\.)?pooler\..*",
            r"(mobilebert\.)?embeddings\.embedding_transformation\..*",
            r"cls\.predictions\.decoder\..*",
            r"cls\.predictions\.bias",
        ),
        prefix="mobilebert.",
    ),
]

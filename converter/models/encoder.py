"""The BERT-layout text encoder that most encoder families are (RoBERTa, XLM-R, ELECTRA, ERNIE,
Data2Vec-Text, ...): embeddings (+ positions, + token types) -> LayerNorm, post-norm layers of
bidirectional attention and an MLP, an optional pooler; and the task heads on top.

Module paths are the checkpoints' names (`bert.encoder.layer.3.attention.self.query.weight`), so
binding needs no renaming table; a family with other names subclasses and renames.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM, ExecutionProvider
from converter.tasks.encoding import BATCH, SEQUENCE, TEXT_TASKS, TextInputs


def span_logits(op, logits, tokens: list) -> dict:
    """Question answering's outputs from its [batch, sequence, 2] logits: the answer span's
    start and end scores per token."""
    start, end = op.Split(logits, axis=-1, num_outputs=2, _outputs=2)
    return {
        "start_logits": (op.Squeeze(start, [-1]), tokens),
        "end_logits": (op.Squeeze(end, [-1]), tokens),
    }


class BertSelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.query = Linear(size, size, True, dtype)
        self.key = Linear(size, size, True, dtype)
        self.value = Linear(size, size, True, dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel, bias=None):
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        return kernel(op, q, k, v, self.heads, self.scale, bias)


class DenseNorm(nn.Module):
    """`dense`, then LayerNorm of it plus the residual (BERT's SelfOutput and Output)."""

    def __init__(self, in_size: int, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(in_size, cfg.hidden_size, True, dtype)
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def forward(self, op, x, residual):
        return self.LayerNorm(op, op.Add(self.dense(op, x), residual))


class BertAttention(nn.Module):
    self_attention_cls: type[nn.Module] = BertSelfAttention

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        # `self` is the checkpoint's name
        setattr(self, "self", self.self_attention_cls(cfg, dtype))  # noqa: B010
        self.output = DenseNorm(cfg.hidden_size, cfg, dtype)

    def forward(self, op, x, kernel, bias=None):
        return self.output(op, self.self(op, x, kernel, bias), x)


class BertIntermediate(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return activation(op, self.act, self.dense(op, x))


class BertLayer(nn.Module):
    """Attention, then the MLP, each closed by a post-norm; `attention_cls` may differ."""

    attention_cls: type[nn.Module] = BertAttention

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = self.attention_cls(cfg, dtype)
        self.intermediate = BertIntermediate(cfg, dtype)
        self.output = DenseNorm(cfg.intermediate_size, cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, bias=None):
        x = self.attention(op, x, kernel, bias)
        return self.output(op, self.intermediate(op, x), x)


class BertEncoder(nn.Module):
    layer_cls = BertLayer

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.layer = nn.ModuleList(
            [self.layer_cls(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        )

    def forward(self, op, x, kernel, bias=None):
        for layer in self.layer:
            x = layer(op, x, kernel, bias)
        return x


class Table(nn.Module):
    """An embedding table read at integer ids."""

    def __init__(self, rows: int, dim: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([rows, dim], dtype)

    def forward(self, op, ids):
        return op.Gather(self.weight, ids, axis=0)


def position_ids(op, cfg: EncoderConfig, input_ids):
    """0, 1, ... per row; RoBERTa-style: padding_idx + 1 + the count of non-pad tokens so far,
    and padding_idx on pad tokens (what transformers computes from input_ids)."""
    if cfg.position_offset == 0:
        length = op.Shape(input_ids, start=1, end=2)
        return op.Unsqueeze(op.Range(0, op.Squeeze(length, [0]), 1), [0])
    real = op.Cast(op.Not(op.Equal(input_ids, cfg.pad_token_id)), to=ir.DataType.INT64)
    return op.Add(op.Mul(op.CumSum(real, 1), real), cfg.pad_token_id)


class BertEmbeddings(nn.Module):
    """Tokens + token types + positions, then LayerNorm (`normed`; pre-norm families such as
    Megatron-BERT and XLM-RoBERTa-XL have none). `token_sum` is what is added before the
    positions, for families that add more (ERNIE's task types)."""

    normed = True

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.embedding_size
        self.word_embeddings = Table(cfg.vocab_size, size, dtype)
        self.position_embeddings = Table(cfg.max_position_embeddings, size, dtype)
        types = cfg.type_vocab_size
        self.token_type_embeddings = Table(types, size, dtype) if types else None
        self.LayerNorm = LayerNorm(size, cfg.norm_eps, dtype) if self.normed else None
        self.cfg = cfg

    def expected_fusions(self, plan) -> dict[str, int]:
        # the norm reads (tokens + types) + positions
        return {"skip_norms": 1 if plan.has(SKIP_NORM) and self.normed else 0}

    def token_sum(self, op, inputs: TextInputs):
        x = self.word_embeddings(op, inputs.input_ids)
        if self.token_type_embeddings is None:
            return x
        # without the input every token is type 0: the row, broadcast
        types = 0 if inputs.token_type_ids is None else inputs.token_type_ids
        return op.Add(x, self.token_type_embeddings(op, types))

    def forward(self, op, inputs: TextInputs):
        positions = position_ids(op, self.cfg, inputs.input_ids)
        x = op.Add(self.token_sum(op, inputs), self.position_embeddings(op, positions))
        return x if self.LayerNorm is None else self.LayerNorm(op, x)


class Pooler(nn.Module):
    """tanh(dense(first token))."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)

    def forward(self, op, hidden):
        return op.Tanh(self.dense(op, first_token(op, hidden)))


def first_token(op, hidden):
    """hidden[:, 0]: the [CLS] / <s> token that poolers and sentence heads read."""
    return op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])


class BertBody(nn.Module):
    """BertModel: embeddings, encoder and (`pooled`) the pooler. A family that puts something
    between the embeddings and the layers (ELECTRA's projection) overrides `embed`; one that
    adds after them (a final norm) overrides `hidden_states`; one whose attention takes more
    than the mask (ESM's rotary positions) wraps the kernel in `attention_kernel`."""

    embeddings_cls = BertEmbeddings
    encoder_cls = BertEncoder

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep: ExecutionProvider, pooled):
        super().__init__()
        self.embeddings = self.embeddings_cls(cfg, dtype)
        self.encoder = self.encoder_cls(cfg, dtype)
        self.pooler = Pooler(cfg, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype

    def embed(self, op, inputs: TextInputs):
        return self.embeddings(op, inputs)

    def attention_kernel(self, op, inputs: TextInputs):
        return encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)

    def hidden_states(self, op, inputs: TextInputs):
        kernel = self.attention_kernel(op, inputs)
        return self.encoder(op, self.embed(op, inputs), kernel)

    def forward(self, op, inputs: TextInputs):
        hidden = self.hidden_states(op, inputs)
        pooled = None if self.pooler is None else self.pooler(op, hidden)
        return hidden, pooled


# -- heads -----------------------------------------------------------------------------------


class MaskedLMHead(nn.Module):
    """cls.predictions: transform (dense, act, LayerNorm), then the tied word table (or its own
    `decoder`, an LM head: int4 builds give it --int4-head-bits, never int8) and the vocabulary
    bias.
    `decoder_bias`: an untied decoder keeps its own bias in place of `bias` (transformers unties
    both when tie_word_embeddings is false)."""

    def __init__(
        self, cfg: EncoderConfig, dtype: ir.DataType, tied: bool, decoder_bias: bool = False
    ):
        super().__init__()
        own_bias = decoder_bias and not tied
        self.transform = PredictionTransform(cfg, dtype)
        self.decoder = (
            None if tied else Linear(cfg.embedding_size, cfg.vocab_size, own_bias, dtype, head=True)
        )
        self.bias = None if own_bias else nn.Parameter([cfg.vocab_size], dtype)

    def forward(self, op, hidden, table):
        x = self.transform(op, hidden)
        logits = (
            op.MatMul(x, op.Transpose(table, perm=[1, 0]))
            if self.decoder is None
            else (self.decoder(op, x))
        )
        return logits if self.bias is None else op.Add(logits, self.bias)


class PredictionTransform(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.embedding_size, True, dtype)
        self.LayerNorm = LayerNorm(cfg.embedding_size, cfg.norm_eps, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.LayerNorm(op, activation(op, self.act, self.dense(op, x)))


class BertPredictions(nn.Module):
    """`cls` holding `predictions` (BertForMaskedLM's names)."""

    def __init__(
        self, cfg: EncoderConfig, dtype: ir.DataType, tied: bool, decoder_bias: bool = False
    ):
        super().__init__()
        self.predictions = MaskedLMHead(cfg, dtype, tied, decoder_bias)

    def forward(self, op, hidden, table):
        return self.predictions(op, hidden, table)


class BertEncoderModel(nn.Module):
    """A BERT-layout body under `body_name` and the task's head, with BERT's head names.

    `tensors` are the checkpoint's tensor names: they say whether a pooler or an untied
    decoder is there to bind."""

    body_cls = BertBody
    body_name = "bert"
    heads = TEXT_TASKS

    def __init__(self, cfg, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        self.cfg, self.task = cfg, task
        pooled = self.uses_pooler(task, tensors)
        setattr(self, self.body_name, self.body_cls(cfg, dtype, ep, pooled))
        self.make_head(cfg, dtype, task, tensors)

    def has(self, tensors: frozenset[str], name: str) -> bool:
        return name in tensors or f"{self.body_name}.{name}" in tensors

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        if task == "text-classification":
            return True
        return task == "feature-extraction" and self.has(tensors, "pooler.dense.weight")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            tied = "cls.predictions.decoder.weight" not in tensors
            self.cls = BertPredictions(cfg, dtype, tied)
        elif task in ("text-classification", "token-classification"):
            self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        elif task == "question-answering":
            self.qa_outputs = Linear(cfg.hidden_size, 2, True, dtype)

    @property
    def body(self) -> BertBody:
        return getattr(self, self.body_name)

    def word_table(self):
        return self.body.embeddings.word_embeddings.weight

    def forward(self, op, inputs: TextInputs) -> dict:
        hidden, pooled = self.body(op, inputs)
        return self.head_outputs(op, hidden, pooled)

    def head_outputs(self, op, hidden, pooled) -> dict:
        cfg, task = self.cfg, self.task
        tokens = [BATCH, SEQUENCE]
        if task == "feature-extraction":
            out = {"last_hidden_state": (hidden, [*tokens, cfg.hidden_size])}
            if pooled is not None:
                out["pooler_output"] = (pooled, [BATCH, cfg.hidden_size])
            return out
        if task == "fill-mask":
            return {"logits": (self.cls(op, hidden, self.word_table()), [*tokens, cfg.vocab_size])}
        if task == "text-classification":
            return {"logits": (self.classifier(op, pooled), [BATCH, cfg.num_labels])}
        if task == "token-classification":
            return {"logits": (self.classifier(op, hidden), [*tokens, cfg.num_labels])}
        return span_logits(op, self.qa_outputs(op, hidden), tokens)

"""Funnel Transformer: blocks of post-norm layers, the sequence pooled between blocks (mean or
max, CLS kept apart under separate_cls: converter/models/funnel_levels.py), the first layer of
each later block attending with pooled queries to the previous level's keys (pool_q_only; else
pooled queries, keys and values). Attention is relative (Transformer-XL style): besides the
content score with `r_w_bias`, each query scores sinusoids of its distance to each key through
`r_kernel` with `r_r_bias` (relative_shift: a table of distances; factorized: sin and cos of
both positions), and whether the key shares its segment through `seg_embed` with `r_s_bias`,
both terms zero where CLS is involved (separate_cls); they reach the kernel as an additive
bias. The embeddings are the word table and a LayerNorm, nothing else.

FunnelBaseModel (text-classification; feature-extraction of a checkpoint without a decoder)
returns the last block's pooled sequence. FunnelModel (fill-mask, token-classification,
question-answering, feature-extraction) adds the decoder: the last block's tokens repeated back
to the full length (CLS apart, zeros past the end), plus the first block's output, through
`num_decoder_layers` layers at the first level.

Not matched: a padded row whose pooled mask keeps no token at all (without separate_cls, a row
of fewer real tokens than 2^(blocks - 1)): transformers then softmaxes scores shifted by -1e6,
and its rounding there is not reproduced; such a row's outputs mean nothing on either side.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.linear import Bias
from converter.config.encoder import EncoderConfig, EncoderRules, _num_labels
from converter.config.reader import MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import Table, first_token, span_logits
from converter.models.funnel_levels import (
    Attending,
    Layout,
    Level,
    first_level,
    pool,
    pool_level,
)
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TEXT_TASKS, TextInputs

POOLED = "pooled_sequence_length"


class FunnelAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        d_model, heads, d_head = cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim
        inner = heads * d_head
        self.q_head = Linear(d_model, inner, False, dtype)
        self.k_head = Linear(d_model, inner, True, dtype)
        self.v_head = Linear(d_model, inner, True, dtype)
        self.r_w_bias = nn.Parameter([heads, d_head], dtype)
        self.r_r_bias = nn.Parameter([heads, d_head], dtype)
        self.r_kernel = nn.Parameter([d_model, heads, d_head], dtype)
        self.r_s_bias = nn.Parameter([heads, d_head], dtype)
        self.seg_embed = nn.Parameter([2, heads, d_head], dtype)
        self.post_proj = Linear(inner, d_model, True, dtype)
        self.layer_norm = LayerNorm(d_model, cfg.norm_eps, dtype)
        self.heads, self.d_head, self.d_model = heads, d_head, d_model
        self.scale = d_head**-0.5

    def _per_head(self, op, q, bias):
        """(q + bias) as [batch, heads, queries, d_head]."""
        q = op.Reshape(op.Add(q, op.Reshape(bias, [-1])), [0, 0, self.heads, self.d_head])
        return op.Transpose(q, perm=[0, 2, 1, 3])

    def _positional(self, op, q, at: Attending):
        if at.factors is not None:
            return self._factorized(op, q, at)
        kernel = op.Reshape(self.r_kernel, [self.d_model, -1])
        keys = op.Reshape(op.MatMul(at.positions, kernel), [0, self.heads, self.d_head])
        scores = op.MatMul(self._per_head(op, q, self.r_r_bias), rank4(op, keys, [1, 2, 0]))
        index = op.Expand(at.index, op.Concat(op.Shape(scores, end=2), op.Shape(at.index), axis=0))
        return op.GatherElements(scores, index, axis=3)

    def _factorized(self, op, q, at: Attending):
        phi, pi, psi, omega = at.factors
        kernel = rank4(op, self.r_kernel, [1, 2, 0])  # [1, heads, d_head, d_model]
        projected = op.MatMul(self._per_head(op, q, self.r_r_bias), kernel)
        sin_part = op.MatMul(op.Mul(projected, phi), rank4(op, psi, [1, 0]))
        cos_part = op.MatMul(op.Mul(projected, pi), rank4(op, omega, [1, 0]))
        return op.Add(sin_part, cos_part)

    def _segment(self, op, q, at: Attending):
        segments = rank4(op, self.seg_embed, [1, 2, 0])  # [1, heads, d_head, 2]
        scores = op.MatMul(self._per_head(op, q, self.r_s_bias), segments)
        different, same = op.Split(scores, axis=-1, num_outputs=2, _outputs=2)
        return op.Where(at.same, same, different)

    def forward(self, op, query, key, at: Attending):
        q, k, v = self.q_head(op, query), self.k_head(op, key), self.v_head(op, key)
        relative = op.Add(self._positional(op, q, at), self._segment(op, q, at))
        if at.cls_keep is not None:
            relative = op.Mul(relative, at.cls_keep)
        bias = op.Mul(relative, op.CastLike(self.scale, relative))
        content_q = op.Add(q, op.Reshape(self.r_w_bias, [-1]))
        out = at.kernel(op, content_q, k, v, self.heads, self.scale, bias)
        return self.layer_norm(op, op.Add(query, self.post_proj(op, out)))


def rank4(op, x, perm):
    """x transposed by `perm`, leading ones up to rank 4, to multiply the rank-4 queries by:
    onnxruntime 1.32's NchwcTransformer crashes (SIGSEGV at session creation) on some f16
    MatMuls of rank-4 queries by lower-rank operands (as for DeBERTa's relative rows)."""
    return op.Unsqueeze(op.Transpose(x, perm=perm), list(range(4 - len(perm))))


class FunnelFFN(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.linear_1 = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.linear_2 = Linear(cfg.intermediate_size, cfg.hidden_size, True, dtype)
        self.layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        h = self.linear_2(op, activation(op, self.act, self.linear_1(op, x)))
        return self.layer_norm(op, op.Add(x, h))


class FunnelLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, calls: int = 1):
        super().__init__()
        self.attention = FunnelAttention(cfg, dtype)
        self.ffn = FunnelFFN(cfg, dtype)
        self.calls = calls  # block_repeats runs a layer more than once

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 2 * self.calls if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: self.calls if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, query, key, at: Attending):
        return self.ffn(op, self.attention(op, query, key, at))


class FunnelEmbeddings(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.word_embeddings = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        self.layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def forward(self, op, input_ids):
        return self.layer_norm(op, self.word_embeddings(op, input_ids))


class FunnelEncoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        sizes, repeats = cfg.extra["block_sizes"], cfg.extra["block_repeats"]
        self.blocks = nn.ModuleList(
            [
                nn.ModuleList([FunnelLayer(cfg, dtype, repeat) for _ in range(size)])
                for size, repeat in zip(sizes, repeats, strict=True)
            ]
        )
        self.repeats, self.first_block_calls = repeats, sizes[0]
        self.layout: Layout = cfg.extra["layout"]

    def forward(self, op, hidden, level: Level, attend):
        """The last block's output and, for the decoder, the hidden state after the first
        `block_sizes[0]` layer calls (transformers counts repeats among them)."""
        calls, first_block = 0, None
        for index, (block, repeat) in enumerate(zip(self.blocks, self.repeats, strict=True)):
            if index > 0:
                layout = self.layout
                pooled, first, second = pool_level(op, level, layout.separate_cls)
                queries = pool(op, hidden, first, second, layout.pooling)
                if layout.pool_q_only:
                    hidden = block[0](op, queries, hidden, attend(pooled, level))
                else:
                    hidden = block[0](op, queries, queries, attend(pooled, pooled))
                calls, level = calls + 1, pooled
            at = attend(level, level)
            for position, layer in enumerate(block):
                for run in range(repeat):
                    if index > 0 and position == 0 and run == 0:
                        continue  # the pooling call above
                    hidden = layer(op, hidden, hidden, at)
                    calls += 1
                    if calls == self.first_block_calls:
                        first_block = hidden
        return hidden, first_block


class FunnelDecoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        count = cfg.extra["num_decoder_layers"]
        self.layers = nn.ModuleList([FunnelLayer(cfg, dtype) for _ in range(count)])
        self.stride = 2 ** (len(cfg.extra["block_sizes"]) - 1)
        self.separate_cls = cfg.extra["layout"].separate_cls

    def upsample(self, op, final, length):
        """Token p of the full length reads pooled token p // stride; under separate_cls CLS
        reads CLS and token p > 0 pooled token 1 + (p - 1) // stride, or zeros past the pooled
        tokens."""
        zeros = op.Mul(op.Slice(final, [0], [1], [1]), op.CastLike(0.0, final))
        padded = op.Concat(final, zeros, axis=1)
        p = op.Range(0, op.Squeeze(length, [0]), 1)
        source = op.Div(p, self.stride)
        if self.separate_cls:
            source = op.Add(op.Div(op.Sub(p, 1), self.stride), 1)
            source = op.Where(op.Equal(p, 0), op.Constant(value_int=0), source)
        source = op.Min(source, op.Squeeze(op.Shape(final, start=1, end=2), [0]))
        return op.Gather(padded, source, axis=1)

    def forward(self, op, final, first_block, at: Attending, length):
        hidden = op.Add(self.upsample(op, final, length), first_block)
        for layer in self.layers:
            hidden = layer(op, hidden, hidden, at)
        return hidden


class FunnelBody(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, decoded: bool):
        super().__init__()
        self.embeddings = FunnelEmbeddings(cfg, dtype)
        self.encoder = FunnelEncoder(cfg, dtype)
        self.decoder = FunnelDecoder(cfg, dtype) if decoded else None
        self.cfg, self.dtype, self.ep = cfg, dtype, ep

    def forward(self, op, inputs: TextInputs):
        hidden = self.embeddings(op, inputs.input_ids)
        length = op.Shape(inputs.input_ids, start=1, end=2)
        level = first_level(op, length, inputs.attention_mask, inputs.token_type_ids)
        layout = self.cfg.extra["layout"]

        def attend(q: Level, k: Level) -> Attending:
            return Attending(op, self.ep, self.dtype, self.cfg.hidden_size, layout, q, k)

        final, first_block = self.encoder(op, hidden, level, attend)
        if self.decoder is None:
            return final
        return self.decoder(op, final, first_block, attend(level, level), length)


class ClassificationHead(nn.Module):
    """linear_out(tanh(linear_hidden(first token)))."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.linear_hidden = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.linear_out = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def forward(self, op, hidden):
        return self.linear_out(op, op.Tanh(self.linear_hidden(op, first_token(op, hidden))))


class FunnelModel(nn.Module):
    """The body under `funnel` and the task's head (transformers' names)."""

    heads = TEXT_TASKS

    def __init__(self, cfg, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        full_length = task in ("fill-mask", "token-classification", "question-answering")
        if full_length and not _has_decoder(tensors):
            raise ConfigError(
                f"this Funnel checkpoint has no decoder (a FunnelBaseModel or a sequence "
                f"classifier): its {task} head needs the full-length sequence the decoder "
                f"upsamples back"
            )
        decoded = full_length or (task == "feature-extraction" and _has_decoder(tensors))
        self.funnel = FunnelBody(cfg, dtype, ep, decoded)
        self.cfg, self.task, self.decoded = cfg, task, decoded
        size = cfg.hidden_size
        if task == "fill-mask":
            if "discriminator_predictions.dense.weight" in tensors:
                raise ConfigError(
                    "this Funnel checkpoint is a FunnelForPreTraining discriminator (one "
                    "replaced-or-original logit per token), not a masked LM: convert it with "
                    "--task feature-extraction"
                )
            tied = "lm_head.weight" not in tensors
            vocab = cfg.vocab_size
            self.lm_head = Bias(vocab, dtype) if tied else Linear(size, vocab, True, dtype, True)
        elif task == "text-classification":
            self.classifier = ClassificationHead(cfg, dtype)
        elif task == "token-classification":
            self.classifier = Linear(size, cfg.num_labels, True, dtype)
        elif task == "question-answering":
            self.qa_outputs = Linear(size, 2, True, dtype)

    def forward(self, op, inputs: TextInputs) -> dict:
        hidden = self.funnel(op, inputs)
        cfg, task = self.cfg, self.task
        tokens = [BATCH, SEQUENCE]
        if task == "feature-extraction":
            dims = [*tokens, cfg.hidden_size] if self.decoded else [BATCH, POOLED, cfg.hidden_size]
            return {"last_hidden_state": (hidden, dims)}
        if task == "fill-mask":
            return {"logits": (self._lm_logits(op, hidden), [*tokens, cfg.vocab_size])}
        if task == "text-classification":
            return {"logits": (self.classifier(op, hidden), [BATCH, cfg.num_labels])}
        if task == "token-classification":
            return {"logits": (self.classifier(op, hidden), [*tokens, cfg.num_labels])}
        return span_logits(op, self.qa_outputs(op, hidden), tokens)

    def _lm_logits(self, op, hidden):
        if isinstance(self.lm_head, Bias):
            table = self.funnel.embeddings.word_embeddings.weight
            hidden = op.MatMul(hidden, op.Transpose(table, perm=[1, 0]))
        return self.lm_head(op, hidden)


def _has_decoder(tensors: frozenset[str]) -> bool:
    name = "decoder.layers.0.attention.q_head.weight"
    return name in tensors or f"funnel.{name}" in tensors


class FunnelRules(EncoderRules):
    """Funnel's own keys (d_model, n_head, d_head, d_inner, the blocks); no position table and
    no token-type table (token types only bias attention)."""

    def read(self, r: ConfigReader) -> EncoderConfig:
        attention = r.get("attention_type", default="relative_shift")
        if attention not in ("relative_shift", "factorized"):
            r.refuse("attention_type", "Funnel attends relative_shift or factorized")
        pooling = r.get("pooling_type", default="mean")
        if pooling not in ("mean", "max"):
            r.refuse("pooling_type", "Funnel pools by mean or max")
        separate_cls = r.bool("separate_cls", True)
        if separate_cls and not r.bool("truncate_seq", True):
            r.refuse(
                "truncate_seq",
                "with separate_cls, keeping the last token is not built (transformers' own "
                "relative positions and upsampling fail at some lengths there)",
            )
        layout = Layout(
            separate_cls, pooling, r.bool("pool_q_only", True), attention != "relative_shift"
        )
        sizes = _block_list(r, "block_sizes", None)
        repeats = _block_list(r, "block_repeats", [1] * len(sizes))
        if len(repeats) != len(sizes):
            raise ConfigError("'block_repeats' must have one entry per block of 'block_sizes'")
        d_model = r.int("d_model", "hidden_size")
        if d_model % 2:
            raise ConfigError(f"'d_model' = {d_model} must be even (sin and cos halves)")
        vocab = r.int("vocab_size", hi=MAX_VOCAB)
        pad = r.get("pad_token_id")
        return EncoderConfig(
            model_type=r.model_type,
            vocab_size=vocab,
            hidden_size=d_model,
            intermediate_size=r.int("d_inner", hi=d_model * 64),
            num_hidden_layers=sum(s * n for s, n in zip(sizes, repeats, strict=True)),
            num_attention_heads=r.int("n_head", "num_attention_heads"),
            head_dim=r.int("d_head"),
            max_position_embeddings=0,  # relative positions only
            type_vocab_size=0,
            token_type_input=True,
            norm_eps=r.float("layer_norm_eps", default=1e-9),
            activation=r.str("hidden_act", default="gelu_new"),
            pad_token_id=None if pad is None else r.int("pad_token_id", lo=0, hi=vocab - 1),
            position_offset=0,
            num_labels=_num_labels(r),
            embedding_size=d_model,
            extra={
                "block_sizes": sizes,
                "block_repeats": repeats,
                "num_decoder_layers": r.int("num_decoder_layers", default=2, lo=0),
                "layout": layout,
            },
        )


def _block_list(r: ConfigReader, key: str, default) -> list[int]:
    value = r.get(key, default=default)
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(f"'{key}' must be a non-empty list of block sizes")
    if any(isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= MAX_LAYERS for v in value):
        raise ConfigError(f"'{key}' = {value!r} must hold positive layer counts")
    return list(value)


FAMILIES = [
    Family(
        "funnel",
        FunnelModel,
        "blocks pooled between them (mean or max, CLS apart or not), relative attention "
        "(relative_shift or factorized) with token-type biases, a decoder upsampling back to "
        "the full length",
        ("funnel-transformer/small", "funnel-transformer/small-base"),
        rules=FunnelRules(),
        task="feature-extraction",
        category="encoder",
        # what a task leaves unread: the decoder of a FunnelModel converted as a classifier,
        # other tasks' heads, a tied head's stored copy
        unused=(
            r"(funnel\.)?decoder\..*",
            r"lm_head\..*",
            r"classifier\..*",
            r"qa_outputs\..*",
            r"discriminator_predictions\..*",
        ),
        prefix="funnel.",
    ),
]

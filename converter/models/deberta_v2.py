"""DeBERTa-v2 (DeBERTa-v3 checkpoints are this type): BERT's post-norm layers with disentangled
attention. Each layer's scores gain content->position terms (c2p: q_i . pos_key[c(i - j)]) and
position->content terms (p2c: k_j . pos_query[p(i - j)]), where the positions are rows of one
relative table (`encoder.rel_embeddings`, LayerNormed under norm_rel_ebd) projected by the layer's
own `pos_key_proj` / `pos_query_proj`, or its key / query projections (share_att_key), and
distances go through log buckets (position_buckets). The terms depend on q and k, so each layer
computes its bias and hands it to the attention kernel. Embeddings are zeroed on padding, and an
optional convolution (conv_kernel_size) joins the first layer's output.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import (
    BertEncoderModel,
    BertIntermediate,
    BertPredictions,
    DenseNorm,
    Table,
    position_ids,
)
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs

MAX_TABLE = 1 << 20  # half-width of the relative index tables (distances beyond saturate)


@dataclass(frozen=True)
class Disentangled:
    """DeBERTa's own settings (`cfg.extra["deberta"]`)."""

    relative: bool  # relative_attention
    c2p: bool  # pos_att_type holds c2p
    p2c: bool  # ... and p2c
    span: int  # the relative table has 2 * span rows
    buckets: int  # position_buckets (0: distances are not bucketed)
    max_relative: int  # max_relative_positions (max_position_embeddings when unset)
    share_att_key: bool
    norm_rel: bool  # norm_rel_ebd names layer_norm
    position_biased_input: bool  # absolute positions are added to the embeddings
    conv_kernel: int  # conv_kernel_size (0: no convolution)
    conv_groups: int
    conv_act: str
    legacy: bool  # the masked-LM head is `cls.predictions` (else `lm_predictions.lm_head`)
    tied: bool  # tie_word_embeddings: the legacy head's decoder is the word table
    pooler_act: str

    @property
    def scale_factor(self) -> int:
        return 1 + int(self.c2p) + int(self.p2c)


def log_bucket(distance: np.ndarray, buckets: int, max_position: int) -> np.ndarray:
    """transformers' make_log_bucket_position: distances within buckets // 2 stay, farther ones
    grow logarithmically (computed in float32, as torch does)."""
    mid = buckets // 2
    sign = np.sign(distance)
    far = np.where((distance < mid) & (distance > -mid), mid - 1, np.abs(distance))
    ratio = (far / np.float32(mid)).astype(np.float32)
    base = np.log(np.float32((max_position - 1) / mid))
    scaled = np.log(ratio) / base * np.float32(mid - 1)
    logs = np.ceil(scaled).astype(np.float32) + np.float32(mid)
    return np.where(far <= mid, distance, (logs * sign).astype(np.int64))


def relative_index_tables(s: Disentangled) -> tuple[np.ndarray, np.ndarray, int]:
    """Row indices into the relative table for each distance d = query - key, d in [-h, h]:
    c2p reads row clamp(bucket(d) + span), p2c (for key row x, query column y, d = x - y) row
    clamp(span - bucket(d)). Beyond +-h both have saturated, so distances are clipped to h."""
    half = max(s.span, s.max_relative, s.buckets)
    while True:
        distance = np.arange(-half, half + 1, dtype=np.int64)
        bucket = log_bucket(distance, s.buckets, s.max_relative) if s.buckets > 0 else distance
        c2p = np.clip(bucket + s.span, 0, 2 * s.span - 1)
        p2c = np.clip(s.span - bucket, 0, 2 * s.span - 1)
        if {c2p[0], p2c[-1]} == {0} and {c2p[-1], p2c[0]} == {2 * s.span - 1}:
            return c2p, p2c, half
        if half >= MAX_TABLE:
            raise ConfigError(
                f"relative positions do not saturate within {MAX_TABLE} tokens "
                f"(position_buckets {s.buckets}, max_relative_positions {s.max_relative})"
            )
        half *= 2


@dataclass
class RelativePositions:
    """What every layer's bias reads: the (normed) relative table [2 * span, hidden] and the
    row each (query, key) pair takes from it for c2p and for p2c, [sequence, sequence]."""

    table: ir.Value
    c2p: ir.Value
    p2c: ir.Value


def _heads_first(op, x, heads: int):
    """[batch, sequence, hidden] -> [batch, heads, sequence, head_dim]."""
    return op.Transpose(op.Reshape(x, [0, 0, heads, -1]), perm=[0, 2, 1, 3])


def _rows_by_head(op, rows, heads: int):
    """Projected relative rows [2 * span, hidden] -> [1, heads, head_dim, 2 * span]. Rank 4, as
    the queries: onnxruntime 1.32's NchwcTransformer crashes (SIGSEGV at session creation) on
    an f16 MatMul of rank-4 queries by these rank-3 rows."""
    per_head = op.Reshape(op.Unsqueeze(rows, [0]), [0, 0, heads, -1])
    return op.Transpose(per_head, perm=[0, 2, 3, 1])


def _take(op, scores, index):
    """scores [batch, heads, n, 2 * span] at each column of index [n, n] -> [batch, heads, n, n]."""
    shape = op.Concat(op.Shape(scores, start=0, end=3), op.Shape(index, start=1, end=2), axis=0)
    return op.GatherElements(scores, op.Expand(index, shape), axis=3)


def disentangled_bias(op, q, k, pos_key, pos_query, rel: RelativePositions, heads, divisor):
    """c2p + p2c over `divisor` (sqrt(head_dim * scale_factor)), [batch, heads, seq, seq];
    pos_key / pos_query are the projected relative rows, None for a term the config omits."""
    terms = []
    if pos_key is not None:
        scores = op.MatMul(_heads_first(op, q, heads), _rows_by_head(op, pos_key, heads))
        terms.append(_take(op, scores, rel.c2p))
    if pos_query is not None:
        scores = op.MatMul(_heads_first(op, k, heads), _rows_by_head(op, pos_query, heads))
        terms.append(op.Transpose(_take(op, scores, rel.p2c), perm=[0, 1, 3, 2]))
    bias = terms[0] if len(terms) == 1 else op.Add(*terms)
    return op.Div(bias, divisor)


class DisentangledSelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Disentangled = cfg.extra["deberta"]
        size = cfg.hidden_size
        self.query_proj = Linear(size, size, True, dtype)
        self.key_proj = Linear(size, size, True, dtype)
        self.value_proj = Linear(size, size, True, dtype)
        own = s.relative and not s.share_att_key
        self.pos_key_proj = Linear(size, size, True, dtype) if own and s.c2p else None
        self.pos_query_proj = Linear(size, size, True, dtype) if own and s.p2c else None
        self.s, self.heads = s, cfg.num_attention_heads
        self.divisor = float(np.sqrt(np.float32(cfg.head_dim * s.scale_factor)))

    def expected_fusions(self, plan) -> dict[str, int]:
        # shared keys: the key / query projections also project the relative rows
        reuses = (
            int(self.s.c2p) + int(self.s.p2c) if self.s.relative and self.s.share_att_key else 0
        )
        return plan.quantized_matmuls(reuses) if reuses else {}

    def forward(self, op, x, kernel, rel: RelativePositions | None):
        q, k, v = self.query_proj(op, x), self.key_proj(op, x), self.value_proj(op, x)
        bias = None
        if rel is not None and (self.s.c2p or self.s.p2c):
            keys = self.key_proj if self.s.share_att_key else self.pos_key_proj
            queries = self.query_proj if self.s.share_att_key else self.pos_query_proj
            pos_key = keys(op, rel.table) if self.s.c2p else None
            pos_query = queries(op, rel.table) if self.s.p2c else None
            bias = disentangled_bias(op, q, k, pos_key, pos_query, rel, self.heads, self.divisor)
        return kernel(op, q, k, v, self.heads, 1.0 / self.divisor, bias)


class DebertaAttention(nn.Module):
    self_attention_cls = DisentangledSelfAttention

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        setattr(self, "self", self.self_attention_cls(cfg, dtype))  # noqa: B010 (checkpoint name)
        self.output = DenseNorm(cfg.hidden_size, cfg, dtype)

    def forward(self, op, x, kernel, rel):
        return self.output(op, self.self(op, x, kernel, rel), x)


class DebertaLayer(nn.Module):
    attention_cls = DebertaAttention

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

    def forward(self, op, x, kernel, rel):
        x = self.attention(op, x, kernel, rel)
        return self.output(op, self.intermediate(op, x), x)


class Conv1d(nn.Module):
    def __init__(self, size: int, groups: int, width: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([size, size // groups, width], dtype)
        self.bias = nn.Parameter([size], dtype)
        self.groups, self.pad = groups, (width - 1) // 2

    def forward(self, op, x):
        """x [batch, sequence, channels], the sequence padded to keep its length."""
        x = op.Transpose(x, perm=[0, 2, 1])
        pads = [self.pad, self.pad]
        x = op.Conv(x, self.weight, self.bias, pads=pads, group=self.groups)
        return op.Transpose(x, perm=[0, 2, 1])


class ConvLayer(nn.Module):
    """A convolution over the embeddings, masked, activated and added to the first layer's
    output before a LayerNorm; padded positions end at zero."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Disentangled = cfg.extra["deberta"]
        self.conv = Conv1d(cfg.hidden_size, s.conv_groups, s.conv_kernel, dtype)
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.act = s.conv_act

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, embedded, residual, keep):
        x = activation(op, self.act, op.Mul(self.conv(op, embedded), keep))
        return op.Mul(self.LayerNorm(op, op.Add(residual, x)), keep)


class RelativeTable(nn.Module):
    def __init__(self, rows: int, size: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([rows, size], dtype)

    def forward(self, op):
        return self.weight  # read whole, inside this module so it binds by its own name


class DebertaEncoder(nn.Module):
    layer_cls = DebertaLayer

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Disentangled = cfg.extra["deberta"]
        self.layer = nn.ModuleList(
            [self.layer_cls(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        )
        rows = 2 * s.span
        self.rel_embeddings = RelativeTable(rows, cfg.hidden_size, dtype) if s.relative else None
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype) if s.norm_rel else None
        self.conv = ConvLayer(cfg, dtype) if s.conv_kernel else None
        self.s = s

    def relative_positions(self, op, x) -> RelativePositions:
        c2p, p2c, half = relative_index_tables(self.s)
        length = op.Squeeze(op.Shape(x, start=1, end=2), [0])
        steps = op.Range(0, length, 1)
        distance = op.Sub(op.Unsqueeze(steps, [1]), op.Unsqueeze(steps, [0]))
        row = op.Add(op.Clip(distance, -half, half), half)
        table = self.rel_embeddings(op)
        if self.LayerNorm is not None:
            table = self.LayerNorm(op, table)
        return RelativePositions(
            table,
            op.Gather(op.Constant(value=ir.tensor(c2p)), row, axis=0),
            op.Gather(op.Constant(value=ir.tensor(p2c)), row, axis=0),
        )

    def forward(self, op, x, kernel, keep):
        rel = self.relative_positions(op, x) if self.rel_embeddings is not None else None
        embedded = x
        for i, layer in enumerate(self.layer):
            x = layer(op, x, kernel, rel)
            if i == 0 and self.conv is not None:
                x = self.conv(op, embedded, x, keep)
        return x


class DebertaEmbeddings(nn.Module):
    """Words (+ absolute positions when position_biased_input, + token types), projected to
    the hidden size when the table is narrower, LayerNorm, then zero on padding."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        s: Disentangled = cfg.extra["deberta"]
        size = cfg.embedding_size
        self.word_embeddings = Table(cfg.vocab_size, size, dtype)
        biased = s.position_biased_input
        self.position_embeddings = (
            Table(cfg.max_position_embeddings, size, dtype) if biased else None
        )
        types = cfg.type_vocab_size
        self.token_type_embeddings = Table(types, size, dtype) if types else None
        projected = size != cfg.hidden_size
        self.embed_proj = Linear(size, cfg.hidden_size, False, dtype) if projected else None
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.cfg = cfg

    def expected_fusions(self, plan) -> dict[str, int]:
        # the norm reads a sum of two tables unless it reads words alone or the projection
        summed = self.position_embeddings is not None or self.token_type_embeddings is not None
        fused = plan.has(SKIP_NORM) and summed and self.embed_proj is None
        return {"skip_norms": int(fused)}

    def forward(self, op, inputs: TextInputs, keep):
        x = self.word_embeddings(op, inputs.input_ids)
        if self.position_embeddings is not None:
            positions = position_ids(op, self.cfg, inputs.input_ids)
            x = op.Add(x, self.position_embeddings(op, positions))
        if self.token_type_embeddings is not None:
            x = op.Add(x, self.token_type_embeddings(op, inputs.token_type_ids))
        if self.embed_proj is not None:
            x = self.embed_proj(op, x)
        return op.Mul(self.LayerNorm(op, x), keep)


class DebertaBody(nn.Module):
    encoder_cls = DebertaEncoder

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = DebertaEmbeddings(cfg, dtype)
        self.encoder = self.encoder_cls(cfg, dtype)
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        keep = op.Unsqueeze(op.Cast(inputs.attention_mask, to=self.dtype), [2])
        return self.encoder(op, self.embeddings(op, inputs, keep), kernel, keep), None


class ContextPooler(nn.Module):
    """act(dense(first token)), the act being pooler_hidden_act."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.act = cfg.extra["deberta"].pooler_act

    def forward(self, op, hidden):
        first = op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
        return activation(op, self.act, self.dense(op, first))


class LMHead(nn.Module):
    """The non-legacy masked-LM head: dense, act, LayerNorm, the word table, `bias`."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.bias = nn.Parameter([cfg.vocab_size], dtype)
        self.act = cfg.activation

    def forward(self, op, hidden, table):
        x = self.LayerNorm(op, activation(op, self.act, self.dense(op, hidden)))
        return op.Add(op.MatMul(x, op.Transpose(table, perm=[1, 0])), self.bias)


class LMPredictions(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.lm_head = LMHead(cfg, dtype)

    def forward(self, op, hidden, table):
        return self.lm_head(op, hidden, table)


class DebertaV2Model(BertEncoderModel):
    body_cls = DebertaBody
    body_name = "deberta"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            if cfg.extra["deberta"].legacy:
                tied = cfg.extra["deberta"].tied
                self.cls = BertPredictions(cfg, dtype, tied, decoder_bias=True)
            else:
                self.lm_predictions = LMPredictions(cfg, dtype)
            return
        if task == "text-classification":
            self.pooler = ContextPooler(cfg, dtype)
        super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task == "text-classification":
            pooled = self.pooler(op, hidden)
        if self.task == "fill-mask" and not self.cfg.extra["deberta"].legacy:
            logits = self.lm_predictions(op, hidden, self.word_table())
            return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}
        return super().head_outputs(op, hidden, pooled)


class DebertaRules(EncoderRules):
    """DeBERTa's keys; `v1` reads what DeBERTa (v1) has (no buckets, shared keys, rel norm or
    convolution)."""

    def __init__(self, v1: bool = False):
        super().__init__()
        self.v1 = v1

    def read(self, r: ConfigReader) -> EncoderConfig:
        cfg = super().read(r)
        # the tokenizer's token_type_ids reach no table when type_vocab_size is 0
        return dataclasses.replace(cfg, token_type_input=cfg.type_vocab_size > 0)

    def read_extra(self, r: ConfigReader) -> dict:
        hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
        if r.has("attention_head_size") and r.int("attention_head_size") * heads != hidden:
            r.refuse("attention_head_size", "heads are hidden_size / num_attention_heads here")
        if r.int("pooler_hidden_size", default=hidden) != hidden:
            r.refuse("pooler_hidden_size", "transformers' classifier reads hidden_size")
        kinds = _attention_kinds(r)
        relative = r.bool("relative_attention", False)
        max_relative = r.int("max_relative_positions", default=-1, lo=-(1 << 31))
        if max_relative < 1:
            max_relative = r.int("max_position_embeddings")
        if self.v1:
            if r.bool("talking_head", False):
                r.refuse("talking_head", "mixing scores across heads is not built")
            buckets, share, norm_rel, conv = 0, False, False, 0
        else:
            buckets = max(r.int("position_buckets", default=-1, lo=-(1 << 31)), 0)
            share = r.bool("share_att_key", False)
            norm_rel = "layer_norm" in [
                x.strip() for x in r.str("norm_rel_ebd", default="none").lower().split("|")
            ]
            conv = max(r.int("conv_kernel_size", default=0, lo=-(1 << 31)), 0)
            if conv and conv % 2 == 0:
                r.refuse("conv_kernel_size", "an even kernel changes the sequence length")
        groups = r.int("conv_groups", default=1) if conv else 1
        if hidden % groups:
            r.refuse("conv_groups", "it must divide hidden_size")
        settings = Disentangled(
            relative=relative,
            c2p="c2p" in kinds,
            p2c="p2c" in kinds,
            span=buckets or max_relative,
            buckets=buckets,
            max_relative=max_relative,
            share_att_key=share,
            norm_rel=norm_rel,
            position_biased_input=r.bool("position_biased_input", True),
            conv_kernel=conv,
            conv_groups=groups,
            conv_act=r.str("conv_act", default="tanh"),
            legacy=r.bool("legacy", True),
            tied=r.bool("tie_word_embeddings", True),
            pooler_act=r.str("pooler_hidden_act", default="gelu"),
        )
        return {"deberta": settings}


def _attention_kinds(r: ConfigReader) -> set[str]:
    value = r.get("pos_att_type", default=[])
    kinds = value.lower().split("|") if isinstance(value, str) else value
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise ConfigError(f"'pos_att_type' must list attention kinds, got {value!r}")
    kinds = {k.strip() for k in kinds} - {""}
    if kinds - {"c2p", "p2c"}:
        r.refuse("pos_att_type", "only c2p and p2c relative terms are built")
    return kinds


# the position ids buffer, an absolute table transformers drops when positions are not biased
# in, the pretraining heads (replaced-token detection; the v3 masked-LM head that the legacy
# head of DebertaV2ForMaskedLM does not read), a tied decoder's stored copies and the bias an
# untied one replaces
DEBERTA_UNUSED = (
    r"(deberta\.)?embeddings\.position_ids",
    r"(deberta\.)?embeddings\.position_embeddings\.weight",
    r"mask_predictions\..*",
    r"lm_predictions\..*",
    r"cls\.predictions\.decoder\..*",
    r"cls\.predictions\.bias",
)

FAMILIES = [
    Family(
        "deberta-v2",
        DebertaV2Model,
        "disentangled relative attention (c2p/p2c, log buckets, shared keys), masked embeddings",
        ("microsoft/deberta-v3-base", "cross-encoder/nli-deberta-v3-base"),
        rules=DebertaRules(),
        task="feature-extraction",
        category="encoder",
        unused=DEBERTA_UNUSED,
        prefix="deberta.",
    ),
]

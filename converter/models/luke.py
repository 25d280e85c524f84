"""LUKE: a RoBERTa-layout encoder that reads entities beside the words. Each entity is a row of
its own vocabulary (entity_ids [batch, entities]) plus the mean of the position rows of the words
it mentions (entity_position_ids [batch, entities, max_mention_length], -1 padding the mention),
plus its token type, then LayerNorm. Words and entities are one sequence for the layers (the
attention mask is the two masks side by side); with use_entity_aware_attention a query's
projection depends on whether it and the key are words or entities (`query`, `w2e_query`,
`e2w_query`, `e2e_query`). Outputs: the words' last_hidden_state and entity_last_hidden_state;
the masked LM also predicts entities (entity_logits)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig
from converter.execution_providers import SKIP_NORM
from converter.models.encoder import (
    BertAttention,
    BertBody,
    BertEncoder,
    BertLayer,
    BertSelfAttention,
    MaskedLMHead,
    Table,
)
from converter.models.roberta import RobertaLMHead, RobertaModel, TiedRules, roberta_unused
from converter.registry import Family
from converter.tasks.encoding import BATCH

ENTITIES, MENTION = "entity_length", "max_mention_length"
INT64_MAX = (1 << 63) - 1


class LukeRules(TiedRules):
    def __init__(self) -> None:
        super().__init__(roberta_positions=True)

    def read_extra(self, r) -> dict:
        return {
            **super().read_extra(r),
            "entity_vocab_size": r.int("entity_vocab_size", default=500000, hi=1 << 24),
            "entity_emb_size": r.int("entity_emb_size", default=256),
            "entity_aware": r.bool("use_entity_aware_attention", True),
        }


class SequenceSplit:
    """The attention kernel of the joint sequence, and where in it the words end."""

    def __init__(self, kernel, words, total, dtype: ir.DataType):
        self.kernel, self.words, self.total, self.dtype = kernel, words, total, dtype

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        return self.kernel(op, q, k, v, heads, scale, bias)

    def split(self, op, x):
        """x[:, :words], x[:, words:]."""
        return op.Slice(x, [0], self.words, [1]), op.Slice(x, self.words, [INT64_MAX], [1])

    def key_flags(self, op):
        """[1, sequence, 1] in the float type: 1 on word keys, and 1 on entity keys."""
        positions = op.Range(0, op.Squeeze(self.total, [0]), 1)
        is_word = op.Less(positions, self.words)
        flags = (op.Cast(is_word, to=self.dtype), op.Cast(op.Not(is_word), to=self.dtype))
        return tuple(op.Unsqueeze(f, [0, 2]) for f in flags)


def interleave_heads(op, a, b, heads: int, head_dim: int):
    """[batch, sequence, heads * head_dim] twice -> [batch, sequence, heads * 2 * head_dim],
    each head's slice of `a` followed by its slice of `b`."""
    per_head = [op.Reshape(x, [0, 0, heads, head_dim]) for x in (a, b)]
    return op.Reshape(op.Concat(*per_head, axis=-1), [0, 0, heads * 2 * head_dim])


class EntityAwareSelfAttention(BertSelfAttention):
    """Four query projections, one per (query, key) type pair, run as one attention: every
    query carries its projection for word keys and for entity keys side by side per head, and
    every key sits in the half that matches its type (zeros in the other), so a query-key dot
    product is the one of the pair's projection."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        size = cfg.hidden_size
        self.w2e_query = Linear(size, size, True, dtype)
        self.e2w_query = Linear(size, size, True, dtype)
        self.e2e_query = Linear(size, size, True, dtype)
        self.head_dim = cfg.head_dim

    def forward(self, op, x, kernel: SequenceSplit, bias=None):
        words, entities = kernel.split(op, x)
        to_words = op.Concat(self.query(op, words), self.e2w_query(op, entities), axis=1)
        to_entities = op.Concat(self.w2e_query(op, words), self.e2e_query(op, entities), axis=1)
        key = self.key(op, x)
        word_keys, entity_keys = kernel.key_flags(op)
        q = interleave_heads(op, to_words, to_entities, self.heads, self.head_dim)
        k = interleave_heads(
            op, op.Mul(key, word_keys), op.Mul(key, entity_keys), self.heads, self.head_dim
        )
        return kernel(op, q, k, self.value(op, x), self.heads, self.scale, bias)


class EntityAwareAttention(BertAttention):
    self_attention_cls = EntityAwareSelfAttention


class EntityAwareLayer(BertLayer):
    attention_cls = EntityAwareAttention


class EntityAwareEncoder(BertEncoder):
    layer_cls = EntityAwareLayer


class LukeEntityEmbeddings(nn.Module):
    """The entity's row (projected to the hidden size where the table is narrower), the mean of
    its mention's position rows, its token type's row, then LayerNorm."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, width = cfg.hidden_size, cfg.extra["entity_emb_size"]
        self.entity_embeddings = Table(cfg.extra["entity_vocab_size"], width, dtype)
        self.entity_embedding_dense = Linear(width, size, False, dtype) if width != size else None
        self.position_embeddings = Table(cfg.max_position_embeddings, size, dtype)
        self.token_type_embeddings = Table(cfg.type_vocab_size, size, dtype)
        self.LayerNorm = LayerNorm(size, cfg.norm_eps, dtype)
        self.dtype = dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # the norm reads (row + positions) + types
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}

    def mention_positions(self, op, position_ids):
        """The mean of the position rows of a mention's words (-1 marks no word)."""
        rows = self.position_embeddings(op, op.Max(position_ids, op.Constant(value_int=0)))
        real = op.Unsqueeze(op.Cast(op.Not(op.Equal(position_ids, -1)), to=self.dtype), [-1])
        total = op.ReduceSum(op.Mul(rows, real), [2], keepdims=0)
        count = op.ReduceSum(real, [2], keepdims=0)
        floor = op.CastLike(op.Constant(value_float=1e-7), count)
        return op.Div(total, op.Max(count, floor))

    def forward(self, op, extra: dict):
        x = self.entity_embeddings(op, extra["entity_ids"])
        if self.entity_embedding_dense is not None:
            x = self.entity_embedding_dense(op, x)
        x = op.Add(x, self.mention_positions(op, extra["entity_position_ids"]))
        x = op.Add(x, self.token_type_embeddings(op, extra["entity_token_type_ids"]))
        return self.LayerNorm(op, x)


class LukeBody(BertBody):
    """Words and entities embedded apart, one joint sequence through the layers, split again."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled):
        if cfg.extra["entity_aware"]:
            self.encoder_cls = EntityAwareEncoder
        super().__init__(cfg, dtype, ep, pooled)
        self.entity_embeddings = LukeEntityEmbeddings(cfg, dtype)

    def attention_kernel(self, op, inputs) -> SequenceSplit:
        mask = op.Concat(inputs.attention_mask, inputs.extra["entity_attention_mask"], axis=1)
        kernel = encoder_attention(op, self.ep, mask, self.dtype)
        words = op.Shape(inputs.input_ids, start=1, end=2)
        return SequenceSplit(kernel, words, op.Shape(mask, start=1, end=2), self.dtype)

    def forward(self, op, inputs):
        words = self.embeddings(op, inputs)
        entities = self.entity_embeddings(op, inputs.extra)
        kernel = self.attention_kernel(op, inputs)
        hidden = self.encoder(op, op.Concat(words, entities, axis=1), kernel)
        words, entities = kernel.split(op, hidden)
        pooled = None if self.pooler is None else self.pooler(op, words)
        return words, entities, pooled


class LukeModel(RobertaModel):
    """RoBERTa's heads (the sentence classifier reads the pooler, as BERT's) on LukeBody; the
    masked LM's word decoder is its own, and it adds `entity_predictions`, whose decoder is the
    entity table where tie_word_embeddings holds."""

    body_cls = LukeBody
    body_name = "luke"
    extra_inputs: ClassVar[dict] = {
        "entity_ids": (ir.DataType.INT64, [BATCH, ENTITIES]),
        "entity_attention_mask": (ir.DataType.INT64, [BATCH, ENTITIES]),
        "entity_token_type_ids": (ir.DataType.INT64, [BATCH, ENTITIES]),
        "entity_position_ids": (ir.DataType.INT64, [BATCH, ENTITIES, MENTION]),
    }

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        if task == "text-classification":
            return True
        return super().uses_pooler(task, tensors)

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            # transformers never ties LUKE's word decoder to the word table
            untied = dataclasses.replace(cfg, extra={**cfg.extra, "tied": False})
            self.lm_head = RobertaLMHead(untied, dtype)
            entity_cfg = dataclasses.replace(
                cfg,
                vocab_size=cfg.extra["entity_vocab_size"],
                embedding_size=cfg.extra["entity_emb_size"],
            )
            self.entity_predictions = MaskedLMHead(entity_cfg, dtype, cfg.extra["tied"])
        elif task == "text-classification":
            self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def forward(self, op, inputs) -> dict:
        hidden, entities, pooled = self.body(op, inputs)
        cfg, task = self.cfg, self.task
        if task == "text-classification":
            return {"logits": (self.classifier(op, pooled), [BATCH, cfg.num_labels])}
        out = self.head_outputs(op, hidden, pooled)
        if task == "feature-extraction":
            out["entity_last_hidden_state"] = (entities, [BATCH, ENTITIES, cfg.hidden_size])
        elif task == "fill-mask":
            table = self.body.entity_embeddings.entity_embeddings.weight
            logits = self.entity_predictions(op, entities, table)
            out["entity_logits"] = (logits, [BATCH, ENTITIES, cfg.extra["entity_vocab_size"]])
        return out


FAMILIES = [
    Family(
        "luke",
        LukeModel,
        "RoBERTa layers over words and entities (mean mention positions), entity-aware queries",
        ("studio-ousia/luke-base", "studio-ousia/luke-large"),
        rules=LukeRules(),
        task="feature-extraction",
        category="encoder",
        unused=(
            *roberta_unused("luke"),
            r"entity_predictions\..*",
            r"classifier\..*",
            r"qa_outputs\..*",
        ),
        prefix="luke.",
    ),
]

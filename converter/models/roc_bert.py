"""RoCBert: BERT under `roc_bert` whose embeddings also read each token's glyph-shape and
pronunciation ids (the inputs input_shape_ids and input_pronunciation_ids [batch_size,
sequence_length] int64, as its tokenizer and transformers name them), each through a table of
its own (`shape_embed`, `pronunciation_embed`) where enable_shape / enable_pronunciation set it.
concat_input: the word, shape and pronunciation vectors are concatenated and mapped to the
hidden size (`map_inputs_layer`) before token types and positions are added and normed;
otherwise BERT's normed embeddings are averaged with the shape and pronunciation vectors."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from converter.components import Linear
from converter.config.encoder import EncoderRules
from converter.dtypes import NUMPY_OF
from converter.errors import ConfigError
from converter.models.encoder import BertBody, BertEmbeddings, BertEncoderModel, Table
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE

# the side inputs, by the table that reads each and the config keys that size it
SIDES = {
    "shape": ("input_shape_ids", "shape_embed"),
    "pronunciation": ("input_pronunciation_ids", "pronunciation_embed"),
}


class RoCBertRules(EncoderRules):
    """`sides`: {side: (rows, width)} of the enabled side tables; `concat`: concat_input."""

    def read_extra(self, r) -> dict:
        concat, hidden = r.bool("concat_input", True), r.int("hidden_size")
        sides = {}
        for side in SIDES:
            if not r.bool(f"enable_{side}", True):
                continue
            width = r.int(f"{side}_embed_dim")
            if not concat and width != hidden:
                raise ConfigError(
                    f"'{side}_embed_dim' = {width} must equal 'hidden_size' = {hidden} when "
                    "'concat_input' is false (the vectors are averaged)"
                )
            sides[side] = (r.int(f"{side}_vocab_size", hi=1 << 24), width)
        return {"concat": concat, "sides": sides}


class RoCBertEmbeddings(BertEmbeddings):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        sides = cfg.extra["sides"]
        for side, (rows, width) in sides.items():
            setattr(self, SIDES[side][1], Table(rows, width, dtype))
        self.map_inputs_layer = None
        if cfg.extra["concat"]:
            width = cfg.hidden_size + sum(w for _, w in sides.values())
            self.map_inputs_layer = Linear(width, cfg.hidden_size, True, dtype)
        self.dtype = dtype

    def side_vectors(self, op, inputs) -> list:
        """The enabled tables read at their inputs, shape before pronunciation."""
        return [
            getattr(self, table)(op, inputs.extra[name])
            for side, (name, table) in SIDES.items()
            if side in self.cfg.extra["sides"]
        ]

    def token_sum(self, op, inputs):
        if self.map_inputs_layer is None:
            return super().token_sum(op, inputs)
        words = self.word_embeddings(op, inputs.input_ids)
        joined = op.Concat(words, *self.side_vectors(op, inputs), axis=-1)
        mapped = self.map_inputs_layer(op, joined)
        return op.Add(mapped, self.token_type_embeddings(op, inputs.token_type_ids))

    def forward(self, op, inputs):
        x = super().forward(op, inputs)
        if self.map_inputs_layer is not None:
            return x
        sides = self.side_vectors(op, inputs)
        for vector in sides:
            x = op.Add(x, vector)
        count = np.array(len(sides) + 1, NUMPY_OF[self.dtype])
        return op.Div(x, op.Constant(value=ir.tensor(count))) if sides else x


class RoCBertBody(BertBody):
    embeddings_cls = RoCBertEmbeddings


class RoCBertModel(BertEncoderModel):
    body_cls = RoCBertBody
    body_name = "roc_bert"

    def __init__(self, cfg, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__(cfg, dtype, ep, task, tensors)
        self.extra_inputs = {
            SIDES[side][0]: (ir.DataType.INT64, [BATCH, SEQUENCE]) for side in cfg.extra["sides"]
        }


FAMILIES = [
    Family(
        "roc_bert",
        RoCBertModel,
        "BERT whose embeddings add glyph-shape and pronunciation tables "
        "(inputs input_shape_ids, input_pronunciation_ids), concatenated and mapped or averaged",
        ("weiweishi/roc-bert-base-zh",),
        rules=RoCBertRules(),
        task="feature-extraction",
        category="encoder",
        # BERT's unread tensors under roc_bert, and the side tables enable_* switches off
        unused=(
            r"(roc_bert\.)?embeddings\.(position_ids|token_type_ids)",
            r"(roc_bert\.)?embeddings\.(shape_embed|pronunciation_embed)\.weight",
            r"cls\..*",
            r"classifier\..*",
            r"qa_outputs\..*",
            r"(roc_bert\.)?pooler\..*",
        ),
        prefix="roc_bert.",
    ),
]

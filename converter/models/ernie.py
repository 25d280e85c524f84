"""ERNIE (1.0 to 3.0, transformers' `ernie`): BERT under `ernie`, plus a task-type table when
use_task_id. The graph adds task type 0 to every token, which is what transformers adds when
task_type_ids is not passed (ERNIE's tokenizer gives none)."""

from __future__ import annotations

from converter.config.encoder import EncoderRules
from converter.models.encoder import BertBody, BertEmbeddings, BertEncoderModel, Table
from converter.registry import Family


class ErnieRules(EncoderRules):
    def read_extra(self, r) -> dict:
        tasks = r.int("task_type_vocab_size", default=3) if r.bool("use_task_id", False) else 0
        return {"task_types": tasks}


class ErnieEmbeddings(BertEmbeddings):
    def __init__(self, cfg, dtype):
        super().__init__(cfg, dtype)
        tasks = cfg.extra["task_types"]
        self.task_type_embeddings = Table(tasks, cfg.embedding_size, dtype) if tasks else None

    def token_sum(self, op, inputs):
        x = super().token_sum(op, inputs)
        if self.task_type_embeddings is None:
            return x
        return op.Add(x, self.task_type_embeddings(op, 0))


class ErnieBody(BertBody):
    embeddings_cls = ErnieEmbeddings


class ErnieModel(BertEncoderModel):
    body_cls = ErnieBody
    body_name = "ernie"


FAMILIES = [
    Family(
        "ernie",
        ErnieModel,
        "BERT with an optional task-type table (task type 0)",
        ("nghuyong/ernie-3.0-base-zh", "nghuyong/ernie-2.0-base-en"),
        rules=ErnieRules(),
        task="feature-extraction",
        category="encoder",
        unused=(
            r"(ernie\.)?embeddings\.(position_ids|token_type_ids)",
            r"cls\.seq_relationship\..*",
            r"(ernie\.)?pooler\..*",
        ),
        prefix="ernie.",
    ),
]

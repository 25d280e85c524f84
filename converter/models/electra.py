"""ELECTRA: BERT's layers under `electra`, embeddings of their own width projected to the hidden
size by `embeddings_project` where the two differ, and no pooler. The masked LM is the generator's
(generator_predictions: dense -> gelu -> LayerNorm at the embedding width; generator_lm_head: the
word table, tied, with its own bias); the sequence classifier is RoBERTa's two layers with gelu.
ElectraForPreTraining is the discriminator, one replaced-or-original logit per token: it has no
masked-LM head, so fill-mask refuses it and names the task that converts it."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.linear import Bias
from converter.config.encoder import EncoderConfig
from converter.errors import ConfigError
from converter.models.encoder import BertBody
from converter.models.roberta import RobertaModel, TiedRules
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE


class ElectraBody(BertBody):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled)
        project = cfg.embedding_size != cfg.hidden_size
        self.embeddings_project = (
            Linear(cfg.embedding_size, cfg.hidden_size, True, dtype) if project else None
        )

    def embed(self, op, inputs):
        x = self.embeddings(op, inputs)
        return x if self.embeddings_project is None else self.embeddings_project(op, x)


class GeneratorPredictions(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.embedding_size, True, dtype)
        self.LayerNorm = LayerNorm(cfg.embedding_size, cfg.norm_eps, dtype)

    def forward(self, op, hidden):
        return self.LayerNorm(op, activation(op, "gelu", self.dense(op, hidden)))


class ElectraModel(RobertaModel):
    body_cls = ElectraBody
    body_name = "electra"
    classifier_act = "gelu"

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task != "fill-mask":
            return super().make_head(cfg, dtype, task, tensors)
        if "generator_predictions.dense.weight" not in tensors:
            raise ConfigError(
                f"this {cfg.model_type} checkpoint has no generator head "
                "(generator_predictions): an ELECTRA-style discriminator scores each token as "
                "original or replaced and has no fill-mask head; convert it with --task "
                "feature-extraction"
            )
        self.generator_predictions = GeneratorPredictions(cfg, dtype)
        vocab = cfg.vocab_size
        tied = cfg.extra["tied"]
        self.generator_lm_head = (
            Bias(vocab, dtype) if tied else Linear(cfg.embedding_size, vocab, True, dtype)
        )

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task != "fill-mask":
            return super().head_outputs(op, hidden, pooled)
        x = self.generator_predictions(op, hidden)
        if isinstance(self.generator_lm_head, Bias):
            x = op.MatMul(x, op.Transpose(self.word_table(), perm=[1, 0]))
        logits = self.generator_lm_head(op, x)
        return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}


FAMILIES = [
    Family(
        "electra",
        ElectraModel,
        "BERT layers, narrower embeddings projected up, no pooler; the generator's masked LM",
        ("google/electra-small-discriminator", "google/electra-base-generator"),
        rules=TiedRules(),
        task="feature-extraction",
        category="encoder",
        # old buffers, the discriminator's head (no task reads it), and a tied copy of the
        # word table that transformers replaces by the table
        unused=(
            r"(electra\.)?embeddings\.(position_ids|token_type_ids)",
            r"discriminator_predictions\..*",
            r"generator_lm_head\.weight",
        ),
        prefix="electra.",
    ),
]

"""ALBERT: BERT's embeddings at a narrower width (embedding_size) mapped up by
`embedding_hidden_mapping_in`, then num_hidden_layers runs of few shared weights: layer i runs
every layer of group int(i / (num_hidden_layers / num_hidden_groups)), each group holding
inner_group_num post-norm layers (`attention.query/key/value/dense/LayerNorm`, `ffn`,
`ffn_output`, `full_layer_layer_norm`). The pooler is one `pooler` Linear and tanh; the
masked-LM head is `predictions` (dense, act, LayerNorm, the decoder tied to the word table)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import MAX_LAYERS, ConfigReader
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEmbeddings, BertEncoderModel
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs


class AlbertAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.query = Linear(size, size, True, dtype)
        self.key = Linear(size, size, True, dtype)
        self.value = Linear(size, size, True, dtype)
        self.dense = Linear(size, size, True, dtype)
        self.LayerNorm = LayerNorm(size, cfg.norm_eps, dtype)
        self.heads, self.scale = cfg.num_attention_heads, cfg.head_dim**-0.5

    def forward(self, op, x, kernel):
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        y = self.dense(op, kernel(op, q, k, v, self.heads, self.scale))
        return self.LayerNorm(op, op.Add(x, y))


class AlbertLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.full_layer_layer_norm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.attention = AlbertAttention(cfg, dtype)
        self.ffn = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.ffn_output = Linear(cfg.intermediate_size, cfg.hidden_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x, kernel):
        x = self.attention(op, x, kernel)
        y = self.ffn_output(op, activation(op, self.act, self.ffn(op, x)))
        return self.full_layer_layer_norm(op, op.Add(y, x))


class AlbertLayerGroup(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        inner = cfg.extra["inner_group_num"]
        self.albert_layers = nn.ModuleList([AlbertLayer(cfg, dtype) for _ in range(inner)])

    def forward(self, op, x, kernel):
        for layer in self.albert_layers:
            x = layer(op, x, kernel)
        return x


class AlbertTransformer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.embedding_hidden_mapping_in = Linear(cfg.embedding_size, cfg.hidden_size, True, dtype)
        groups = cfg.extra["num_hidden_groups"]
        self.albert_layer_groups = nn.ModuleList(
            [AlbertLayerGroup(cfg, dtype) for _ in range(groups)]
        )
        layers = cfg.num_hidden_layers
        self.schedule = [int(i / (layers / groups)) for i in range(layers)]
        self.runs = layers * cfg.extra["inner_group_num"]  # layer runs, weights shared

    def expected_fusions(self, plan) -> dict[str, int]:
        # declared per run here: the shared layer modules each appear once in the tree (their
        # Linears declare one quantized MatMul each; a group run n times adds n - 1 per Linear)
        reruns = 0
        for index, group in enumerate(self.albert_layer_groups):
            linears = sum(isinstance(m, Linear) for m in group.modules())
            reruns += (self.schedule.count(index) - 1) * linears
        return {
            "skip_norms": 2 * self.runs if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: self.runs if plan.has(ENCODER_MHA) else 0,
            **plan.quantized_matmuls(reruns),
        }

    def forward(self, op, x, kernel):
        x = self.embedding_hidden_mapping_in(op, x)
        for group in self.schedule:
            x = self.albert_layer_groups[group](op, x, kernel)
        return x


class AlbertBody(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg, dtype)
        self.encoder = AlbertTransformer(cfg, dtype)
        self.pooler = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        hidden = self.encoder(op, self.embeddings(op, inputs), kernel)
        if self.pooler is None:
            return hidden, None
        first = op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
        return hidden, op.Tanh(self.pooler(op, first))


class AlbertMLMHead(nn.Module):
    """dense, act, LayerNorm, then the word table and `bias` (tied) or the `decoder` with its
    own bias (untied: transformers unties both)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, tied: bool):
        super().__init__()
        width = cfg.embedding_size
        self.dense = Linear(cfg.hidden_size, width, True, dtype)
        self.LayerNorm = LayerNorm(width, cfg.norm_eps, dtype)
        self.decoder = None if tied else Linear(width, cfg.vocab_size, True, dtype, head=True)
        self.bias = nn.Parameter([cfg.vocab_size], dtype) if tied else None
        self.act = cfg.activation

    def forward(self, op, hidden, table):
        x = self.LayerNorm(op, activation(op, self.act, self.dense(op, hidden)))
        if self.decoder is not None:
            return self.decoder(op, x)
        return op.Add(op.MatMul(x, op.Transpose(table, perm=[1, 0])), self.bias)


class AlbertModel(BertEncoderModel):
    body_cls = AlbertBody
    body_name = "albert"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        if task == "text-classification":
            return True
        return task == "feature-extraction" and self.has(tensors, "pooler.weight")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.predictions = AlbertMLMHead(cfg, dtype, cfg.extra["tied"])
        else:
            super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task != "fill-mask":
            return super().head_outputs(op, hidden, pooled)
        logits = self.predictions(op, hidden, self.word_table())
        return {"logits": (logits, [BATCH, SEQUENCE, self.cfg.vocab_size])}


class AlbertRules(EncoderRules):
    def read_extra(self, r: ConfigReader) -> dict:
        return {
            "num_hidden_groups": r.int("num_hidden_groups", default=1, hi=MAX_LAYERS),
            "inner_group_num": r.int("inner_group_num", default=1, hi=MAX_LAYERS),
            "tied": r.bool("tie_word_embeddings", True),
        }


FAMILIES = [
    Family(
        "albert",
        AlbertModel,
        "factorized embeddings mapped up, layer weights shared across groups of layers",
        ("albert/albert-base-v2", "textattack/albert-base-v2-imdb"),
        rules=AlbertRules(),
        task="feature-extraction",
        category="encoder",
        # buffers, the sentence-order head of AlbertForPreTraining, a pooler a head does not
        # read, a tied decoder's stored copies and the bias an untied one replaces
        unused=(
            r"(albert\.)?embeddings\.position_ids",
            r"(albert\.)?embeddings\.token_type_ids",
            r"sop_classifier\..*",
            r"(albert\.)?pooler\..*",
            r"predictions\.decoder\..*",
            r"predictions\.bias",
        ),
        prefix="albert.",
    ),
]

"""RoFormer: BERT's post-norm layers and names with rotary positions in place of a position
table: each layer rotates q and k (and v under rotary_value) by pairs (2i, 2i + 1), the angles'
sines and cosines read from `encoder.embed_positions` (its first half sin, its second cos, one
row per position, as checkpoints store it). Embeddings are words + token types at
embedding_size, projected up by `embeddings_project` when narrower. Its classifier is dense, the
hidden act, out_proj on the first token; the masked-LM head is BERT's `cls.predictions`."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.encoder import BertEncoder, BertEncoderModel, BertPredictions, Table
from converter.registry import Family
from converter.tasks.encoding import BATCH, TextInputs


class RotaryKernel:
    """The attention kernel, with q and k (and v) rotated first."""

    def __init__(self, kernel, cos, sin, rotary_value: bool):
        self.kernel, self.cos, self.sin, self.rotary_value = kernel, cos, sin, rotary_value

    def _rotate(self, op, x, heads: int):
        return op.RotaryEmbedding(x, self.cos, self.sin, interleaved=1, num_heads=heads)

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        q, k = self._rotate(op, q, heads), self._rotate(op, k, heads)
        if self.rotary_value:
            v = self._rotate(op, v, heads)
        return self.kernel(op, q, k, v, heads, scale, bias)


class RoFormerEncoder(BertEncoder):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.embed_positions = Table(cfg.max_position_embeddings, cfg.head_dim, dtype)
        self.rotary_value = cfg.extra["rotary_value"]

    def forward(self, op, x, kernel, input_ids):
        length = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
        positions = op.Expand(op.Unsqueeze(op.Range(0, length, 1), [0]), op.Shape(input_ids))
        sin, cos = op.Split(self.embed_positions(op, positions), axis=-1, num_outputs=2, _outputs=2)
        return super().forward(op, x, RotaryKernel(kernel, cos, sin, self.rotary_value))


class RoFormerEmbeddings(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.embedding_size
        self.word_embeddings = Table(cfg.vocab_size, size, dtype)
        self.token_type_embeddings = Table(cfg.type_vocab_size, size, dtype)
        self.LayerNorm = LayerNorm(size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}  # the norm reads words + types

    def forward(self, op, inputs: TextInputs):
        types = self.token_type_embeddings(op, inputs.token_type_ids)
        return self.LayerNorm(op, op.Add(self.word_embeddings(op, inputs.input_ids), types))


class RoFormerBody(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = RoFormerEmbeddings(cfg, dtype)
        narrower = cfg.embedding_size != cfg.hidden_size
        self.embeddings_project = (
            Linear(cfg.embedding_size, cfg.hidden_size, True, dtype) if narrower else None
        )
        self.encoder = RoFormerEncoder(cfg, dtype)
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        x = self.embeddings(op, inputs)
        if self.embeddings_project is not None:
            x = self.embeddings_project(op, x)
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        return self.encoder(op, x, kernel, inputs.input_ids), None


class ClassificationHead(nn.Module):
    """out_proj(act(dense(first token))), act being hidden_act."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)
        self.out_proj = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)
        self.act = cfg.activation

    def forward(self, op, hidden):
        first = op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])
        return self.out_proj(op, activation(op, self.act, self.dense(op, first)))


class RoFormerModel(BertEncoderModel):
    body_cls = RoFormerBody
    body_name = "roformer"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.cls = BertPredictions(cfg, dtype, cfg.extra["tied"], decoder_bias=True)
        elif task == "text-classification":
            self.classifier = ClassificationHead(cfg, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        if self.task == "text-classification":
            return {"logits": (self.classifier(op, hidden), [BATCH, self.cfg.num_labels])}
        return super().head_outputs(op, hidden, pooled)


class RoFormerRules(EncoderRules):
    def read(self, r: ConfigReader) -> EncoderConfig:
        cfg = super().read(r)
        if cfg.head_dim % 2:
            raise ConfigError(f"rotary pairs need an even head size, got {cfg.head_dim}")
        if r.bool("is_decoder", False):
            r.refuse("is_decoder", "RoFormer converts as a bidirectional encoder")
        return cfg

    def read_extra(self, r: ConfigReader) -> dict:
        return {
            "rotary_value": r.bool("rotary_value", False),
            "tied": r.bool("tie_word_embeddings", True),
        }


FAMILIES = [
    Family(
        "roformer",
        RoFormerModel,
        "BERT's post-norm layers with interleaved rotary positions (stored sin/cos table)",
        ("junnyu/roformer_chinese_base", "junnyu/roformer_chinese_small"),
        rules=RoFormerRules(),
        task="feature-extraction",
        category="encoder",
        # a tied decoder's stored copies and the bias an untied one replaces
        unused=(r"cls\.predictions\.decoder\..*", r"cls\.predictions\.bias"),
        prefix="roformer.",
    ),
]

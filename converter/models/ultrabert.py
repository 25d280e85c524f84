"""UltraBERT: EuroBERT's bidirectional Llama layers (eurobert.py) with ModernBERT's alternation:
sliding layers see keys at most sliding_window tokens away and rotate at their own base. Its
masked-LM head is `head.linear1`, `head.linear2` (each followed by tanh-GELU, no biases) and
`head.decoder` (tied under tie_word_embeddings); classifiers read the first token (cls) or the
mean of the unpadded ones; question answering is `qa_outputs`. Checkpoints keep the Hub layout
(transformers renames it when loading): the body under `ultrabert`, the decoder as `cls`."""

from __future__ import annotations

from dataclasses import dataclass, fields

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, activation
from converter.config import FULL, SLIDING, Rope, parse_local_rope
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.models.encoder import span_logits
from converter.models.eurobert import (
    EuroBertModel,
    LlamaEncoderBody,
    LlamaEncoderConfig,
    LlamaEncoderLayer,
    LlamaEncoderRules,
    pool,
)
from converter.models.modernbert import window_bias
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TEXT_TASKS, TextInputs


@dataclass(frozen=True)
class UltrabertConfig(LlamaEncoderConfig):
    sliding: tuple[bool, ...] = ()  # per layer: windowed attention
    window: int = 128  # sliding layers see keys at most this many tokens away
    local_rope: Rope | None = None
    prediction_head_size: int = 768


class UltrabertLayer(LlamaEncoderLayer):
    def rope_of(self, cfg: UltrabertConfig, index: int) -> Rope:
        return cfg.local_rope if cfg.sliding[index] else cfg.rope


class UltrabertBody(LlamaEncoderBody):
    layer_cls = UltrabertLayer

    def layer_biases(self, op, ids) -> list:
        if not any(self.cfg.sliding):
            return super().layer_biases(op, ids)
        local = window_bias(op, ids, self.cfg.window, self.dtype)
        return [local if sliding else None for sliding in self.cfg.sliding]


class PredictionHead(nn.Module):
    def __init__(self, cfg: UltrabertConfig, dtype: ir.DataType):
        super().__init__()
        size, inner = cfg.hidden_size, cfg.prediction_head_size
        self.linear1 = Linear(size, inner, False, dtype)
        self.linear2 = Linear(inner, size, False, dtype)

    def forward(self, op, hidden):
        x = activation(op, "gelu_pytorch_tanh", self.linear1(op, hidden))
        return activation(op, "gelu_pytorch_tanh", self.linear2(op, x))


class UltrabertModel(EuroBertModel):
    body_cls = UltrabertBody
    body_name = "ultrabert"
    heads = TEXT_TASKS

    def make_head(self, cfg: UltrabertConfig, dtype, task: str, tensors) -> None:
        if task == "fill-mask":
            self.head = PredictionHead(cfg, dtype)
            # the decoder: the token table when tied
            size, vocab = cfg.hidden_size, cfg.vocab_size
            self.cls = None if cfg.tied else Linear(size, vocab, False, dtype, head=True)
        elif task == "question-answering":
            self.qa_outputs = Linear(cfg.hidden_size, 2, True, dtype)
        elif task != "feature-extraction":
            self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def forward(self, op, inputs: TextInputs) -> dict:
        task = self.task
        if task not in ("fill-mask", "text-classification", "question-answering"):
            return super().forward(op, inputs)
        hidden, _ = self.body(op, inputs)
        cfg, tokens = self.cfg, [BATCH, SEQUENCE]
        if task == "fill-mask":
            x = self.head(op, hidden)
            if self.cls is None:
                logits = op.MatMul(x, op.Transpose(self.word_table(), perm=[1, 0]))
            else:
                logits = self.cls(op, x)
            return {"logits": (logits, [*tokens, cfg.vocab_size])}
        if task == "text-classification":
            how, dtype = cfg.classifier_pooling, self.body.dtype
            pooled = pool(op, hidden, inputs.attention_mask, how, dtype)
            return {"logits": (self.classifier(op, pooled), [BATCH, cfg.num_labels])}
        return span_logits(op, self.qa_outputs(op, hidden), tokens)


class UltrabertRules(LlamaEncoderRules):
    poolings = ("mean", "cls")

    def read(self, r: ConfigReader) -> UltrabertConfig:
        layers = r.int("num_hidden_layers")
        windows = r.raw.get("attention_windows")  # older configs: a window (or 0) per layer
        window = r.int("sliding_window", default=128)
        if windows is not None:
            if not isinstance(windows, list) or len(windows) != layers:
                raise ConfigError(f"'attention_windows' must give each of the {layers} layers one")
            window = next((w for w in windows if w), window)
            if r.raw.get("layer_types") is None:
                r.raw["layer_types"] = [SLIDING if w else FULL for w in windows]
        sliding = _sliding_layers(r, layers)
        thetas = r.raw.get("rope_theta")
        if isinstance(thetas, list) and not isinstance(r.raw.get("rope_parameters"), dict):
            # older configs: a base per layer, the last of each layer type winning
            kinds = [SLIDING if s else FULL for s in sliding]
            r.raw["rope_parameters"] = {
                kind: {"rope_type": "default", "rope_theta": theta}
                for kind, theta in zip(kinds, thetas, strict=False)
            }
            del r.raw["rope_theta"]
        base = super().read(r)
        return UltrabertConfig(
            **{f.name: getattr(base, f.name) for f in fields(LlamaEncoderConfig)},
            sliding=sliding,
            window=window,
            local_rope=self.read_local_rope(r, base.head_dim) or base.rope,
            prediction_head_size=r.int("prediction_head_size", default=768),
        )

    def read_local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return parse_local_rope(r.raw, head_dim=head_dim)


def _sliding_layers(r: ConfigReader, layers: int) -> tuple[bool, ...]:
    types = r.raw.get("layer_types")
    if types is None:  # every third layer global
        return tuple(bool((i + 1) % 3) for i in range(layers))
    if not isinstance(types, list) or len(types) != layers or set(types) - {FULL, SLIDING}:
        raise ConfigError(
            f"'layer_types' must name {FULL} or {SLIDING} for each of the {layers} layers"
        )
    return tuple(t == SLIDING for t in types)


FAMILIES = [
    Family(
        "ultrabert",
        UltrabertModel,
        "EuroBERT's bidirectional Llama layers with ModernBERT's local windows and rope bases",
        ("dmis-lab/UltraBERT-150M",),
        rules=UltrabertRules(),
        task="feature-extraction",
        category="encoder",
        prefix="ultrabert.",
        unused=(r"cls\.weight",),  # a tied decoder's stored copy of the token table
    ),
]

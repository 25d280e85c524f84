"""Jina Embeddings v3 (transformers' native port), and the rotary post-norm encoder that NomicBERT
(nomic_bert.py) and GTE (gte.py) share with it: words (+ token types) and a LayerNorm, then
layers of packed q | k | v with rotary positions (rotate-half, the family's rope_parameters),
norm(x + attention), norm(x + MLP). Names are the Hub layout checkpoints keep (transformers
renames them when loading): `emb_ln`, `encoder.layers.N.mixer.Wqkv/out_proj`, `mlp.fc1/fc2`,
`norm1`, `norm2`. Jina's heads are XLM-RoBERTa's, under `roberta`."""

from __future__ import annotations

from dataclasses import dataclass, fields

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.attention import Rotary
from converter.components.encoder_attention import encoder_attention
from converter.config import FULL, Rope, parse_rope
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEncoderModel, Pooler, Table
from converter.models.mpnet import ClassificationHead, MPNetLMHead
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs


@dataclass(frozen=True)
class RotaryEncoderConfig(EncoderConfig):
    rope: Rope | None = None
    tied: bool = True  # tie_word_embeddings


class PackedAttention(nn.Module):
    """q | k | v from one projection (rows q, then k, then v), rotated, then the output one."""

    qkv_name, out_name = "Wqkv", "out_proj"

    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType, bias: bool):
        super().__init__()
        size = cfg.hidden_size
        setattr(self, self.qkv_name, Linear(size, 3 * size, bias, dtype))
        setattr(self, self.out_name, Linear(size, size, bias, dtype))
        self.heads, self.scale, self.rope = cfg.num_attention_heads, cfg.head_dim**-0.5, cfg.rope

    def forward(self, op, x, kernel, rotary):
        packed = getattr(self, self.qkv_name)(op, x)
        q, k, v = op.Split(packed, axis=-1, num_outputs=3, _outputs=3)
        q, k = rotary(op, q, self.heads, self.rope), rotary(op, k, self.heads, self.rope)
        return getattr(self, self.out_name)(op, kernel(op, q, k, v, self.heads, self.scale))


class FcMLP(nn.Module):
    """fc2(act(fc1(x)))."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.fc1 = Linear(cfg.hidden_size, cfg.intermediate_size, True, dtype)
        self.fc2 = Linear(cfg.intermediate_size, cfg.hidden_size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.fc2(op, activation(op, self.act, self.fc1(op, x)))


class RotaryLayer(nn.Module):
    """norm(x + attention(x)), then norm(h + mlp(h)); subclasses name the parts."""

    attention_name, first_norm, second_norm = "mixer", "norm1", "norm2"
    attention_cls, attention_bias = PackedAttention, True
    mlp_cls = FcMLP

    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, eps = cfg.hidden_size, cfg.norm_eps
        setattr(self, self.attention_name, self.attention_cls(cfg, dtype, self.attention_bias))
        setattr(self, self.first_norm, LayerNorm(size, eps, dtype))
        self.mlp = self.mlp_cls(cfg, dtype)
        setattr(self, self.second_norm, LayerNorm(size, eps, dtype))

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel, rotary):
        attention = getattr(self, self.attention_name)(op, x, kernel, rotary)
        x = getattr(self, self.first_norm)(op, op.Add(x, attention))
        return getattr(self, self.second_norm)(op, op.Add(x, self.mlp(op, x)))


class RotaryStack(nn.Module):
    """`encoder` holding the layers under `layers_name`, rotated at positions 0, 1, ..."""

    layers_name = "layers"
    layer_cls = RotaryLayer

    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType):
        super().__init__()
        layers = [self.layer_cls(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        setattr(self, self.layers_name, nn.ModuleList(layers))
        self.dtype = dtype

    def forward(self, op, x, kernel, input_ids):
        length = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
        positions = op.Expand(op.Unsqueeze(op.Range(0, length, 1), [0]), op.Shape(input_ids))
        rotary = Rotary(self.dtype, positions)
        for layer in getattr(self, self.layers_name):
            x = layer(op, x, kernel, rotary)
        return x


class WordsAndTypes(nn.Module):
    """words (+ the token-type rows: the input's, or row 0 when the graph reads none)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, norm: bool):
        super().__init__()
        self.word_embeddings = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        types = cfg.type_vocab_size
        self.token_type_embeddings = Table(types, cfg.hidden_size, dtype) if types else None
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype) if norm else None
        self.summed = types > 0 and cfg.token_type_input  # words + types of the same shape

    def expected_fusions(self, plan) -> dict[str, int]:
        # the embedding norm reads words + types (row 0 alone broadcasts: no skip norm)
        return {"skip_norms": int(plan.has(SKIP_NORM) and self.summed)}

    def forward(self, op, inputs: TextInputs):
        x = self.word_embeddings(op, inputs.input_ids)
        if self.token_type_embeddings is not None:
            if inputs.token_type_ids is None:  # every token is type 0
                types = self.token_type_embeddings(op, op.Constant(value_int=0))
            else:
                types = self.token_type_embeddings(op, inputs.token_type_ids)
            x = op.Add(x, types)
        return x if self.LayerNorm is None else self.LayerNorm(op, x)


class RotaryBody(nn.Module):
    """The embeddings, their norm (`emb_ln` beside them, or their own `LayerNorm`), the layers
    and an optional pooler."""

    stack_cls = RotaryStack
    norm_name = "emb_ln"  # None: the norm is embeddings.LayerNorm

    def __init__(self, cfg: RotaryEncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.embeddings = WordsAndTypes(cfg, dtype, norm=self.norm_name is None)
        if self.norm_name is not None:
            setattr(self, self.norm_name, LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype))
        self.encoder = self.stack_cls(cfg, dtype)
        self.pooler = Pooler(cfg, dtype) if pooled else None
        self.ep, self.dtype = ep, dtype

    def forward(self, op, inputs: TextInputs):
        x = self.embeddings(op, inputs)
        if self.norm_name is not None:
            x = getattr(self, self.norm_name)(op, x)
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype)
        hidden = self.encoder(op, x, kernel, inputs.input_ids)
        return hidden, None if self.pooler is None else self.pooler(op, hidden)


class RotaryEncoderRules(EncoderRules):
    """EncoderRules plus the rope (rope_parameters, or the older rope_theta) and the tie; token
    types are read only when there are more than one."""

    def read(self, r: ConfigReader) -> RotaryEncoderConfig:
        base = super().read(r)
        head_dim = r.get("head_dim")
        if head_dim is not None and r.int("head_dim") != base.head_dim:
            r.refuse("head_dim", "heads are hidden_size / num_attention_heads wide here")
        rope = parse_rope(r.raw, head_dim=base.head_dim, layer_type=FULL)
        if rope.dim != base.head_dim:
            raise ConfigError(
                f"partial_rotary_factor: transformers' {r.model_type} rotates whole heads "
                f"whatever it says (a rotary dim of {rope.dim} of {base.head_dim} is refused)"
            )
        values = {f.name: getattr(base, f.name) for f in fields(EncoderConfig)}
        values["token_type_input"] = base.type_vocab_size > 1
        return RotaryEncoderConfig(**values, rope=rope, tied=r.bool("tie_word_embeddings", True))


class JinaEmbeddingsV3Model(BertEncoderModel):
    """XLM-RoBERTa's heads: `lm_head` (dense, gelu, layer_norm, tied decoder), the classifier
    dense, tanh, out_proj on the first token, `qa_outputs`."""

    body_cls = RotaryBody
    body_name = "roberta"

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return task == "feature-extraction" and self.has(tensors, "pooler.dense.weight")

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.lm_head = MPNetLMHead(cfg, dtype, cfg.tied)
        elif task == "text-classification":
            self.classifier = ClassificationHead(cfg, dtype)
        else:
            super().make_head(cfg, dtype, task, tensors)

    def head_outputs(self, op, hidden, pooled) -> dict:
        cfg = self.cfg
        if self.task == "fill-mask":
            logits = self.lm_head(op, hidden, self.word_table())
            return {"logits": (logits, [BATCH, SEQUENCE, cfg.vocab_size])}
        if self.task == "text-classification":
            return {"logits": (self.classifier(op, hidden), [BATCH, cfg.num_labels])}
        return super().head_outputs(op, hidden, pooled)


def refuse_unread(r: ConfigReader, keys: dict[str, object]) -> None:
    """Hub configs written for the original remote code keep keys transformers' port does not
    read: refuse any that disagrees with what is read, rather than convert another model."""
    for key, expected in keys.items():
        if r.has(key) and r.raw[key] != expected:
            r.refuse(key, f"transformers' {r.model_type} does not read it (reads {expected!r})")


FAMILIES = [
    Family(
        "jina_embeddings_v3",
        JinaEmbeddingsV3Model,
        "rotary post-norm encoder (packed Wqkv), XLM-RoBERTa's heads",
        ("jinaai/jina-embeddings-v3-hf",),
        rules=RotaryEncoderRules(),
        task="feature-extraction",
        category="encoder",
        # buffers, a pooler the head does not read, a tied decoder's stored copies and the
        # bias an untied one replaces
        unused=(
            r"(roberta\.)?pooler\..*",
            r"lm_head\.decoder\..*",
            r"lm_head\.bias",
        ),
        prefix="roberta.",
    ),
]

"""ESM (protein language models, ESM-1 and ESM-2): pre-norm layers named as BERT's, no token
types, positions either rotary (ESM-2: rotate-half q/k by 0, 1, ... per row) or a padding-aware
table (ESM-1), an optional embeddings.layer_norm before the layers and encoder.
emb_layer_norm_after after them, padded tokens zeroed after the embeddings, and token_dropout's
rescaling: mask tokens embed as zeros and every row is scaled by (1 - 0.12) / (1 - its share of
mask tokens among its real tokens), as transformers does at inference too."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm
from converter.config.encoder import EncoderRules
from converter.config.reader import MAX_VOCAB
from converter.dtypes import NUMPY_OF
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.encoder import BertIntermediate, Table, position_ids
from converter.models.prenorm import PreNormBody, PreNormEncoder, PreNormLayer
from converter.models.roberta import RobertaLMHead, RobertaModel
from converter.registry import Family
from converter.tasks.encoding import TEXT_TASKS
from converter.weights import Assembly

MASK_RATIO_TRAIN = 0.15 * 0.8  # fixed in ESM's training, and in transformers


class EsmRules(EncoderRules):
    position_types = ("absolute", "rotary")

    def __init__(self) -> None:
        super().__init__(token_types=False)

    def read(self, r):
        if r.bool("is_folding_model", False):
            r.refuse("is_folding_model", "ESMFold's folding trunk is not built")
        cfg = super().read(r)
        if not cfg.extra["rotary"]:  # ESM-1's table counts positions as RoBERTa does
            if cfg.pad_token_id is None:
                raise ConfigError("'pad_token_id' is missing: ESM's positions count from it")
            cfg = dataclasses.replace(cfg, position_offset=cfg.pad_token_id + 1)
        return cfg

    def read_extra(self, r) -> dict:
        dropout = r.bool("token_dropout", False)
        return {
            "tied": r.bool("tie_word_embeddings", True),
            "rotary": r.get("position_embedding_type") == "rotary",
            "rope_theta": r.float("rope_theta", default=10000.0),
            "layer_norm_before": r.bool("emb_layer_norm_before", False),
            "token_dropout": dropout,
            # token dropout counts the mask tokens of each row
            "mask_token_id": r.int("mask_token_id", lo=0, hi=MAX_VOCAB) if dropout else None,
        }


class EsmEmbeddings(nn.Module):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__()
        extra, size = cfg.extra, cfg.hidden_size
        self.word_embeddings = Table(cfg.vocab_size, size, dtype)
        before = extra["layer_norm_before"]
        self.layer_norm = LayerNorm(size, cfg.norm_eps, dtype) if before else None
        rotary = extra["rotary"]
        self.position_embeddings = (
            None if rotary else Table(cfg.max_position_embeddings, size, dtype)
        )
        self.cfg, self.dtype = cfg, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # the norm reads a sum only when a position table is added
        fused = self.layer_norm is not None and self.position_embeddings is not None
        return {"skip_norms": int(fused and plan.has(SKIP_NORM))}

    def _const(self, op, value: float):
        return op.Constant(value=ir.tensor(np.array(value, NUMPY_OF[self.dtype])))

    def forward(self, op, inputs):
        ids, keep = inputs.input_ids, op.Cast(inputs.attention_mask, to=self.dtype)
        x = self.word_embeddings(op, ids)
        if self.cfg.extra["token_dropout"]:
            masked = op.Equal(ids, self.cfg.extra["mask_token_id"])
            x = op.Where(op.Unsqueeze(masked, [-1]), self._const(op, 0.0), x)
            share = op.Div(
                op.ReduceSum(op.Cast(masked, to=self.dtype), [-1], keepdims=1),
                op.ReduceSum(keep, [-1], keepdims=1),
            )
            x = op.Mul(x, self._const(op, 1 - MASK_RATIO_TRAIN))
            x = op.Div(x, op.Unsqueeze(op.Sub(self._const(op, 1.0), share), [-1]))
        if self.position_embeddings is not None:
            positions = position_ids(op, self.cfg, ids)
            x = op.Add(x, self.position_embeddings(op, positions))
        if self.layer_norm is not None:
            x = self.layer_norm(op, x)
        return op.Mul(x, op.Unsqueeze(keep, [-1]))


INV_FREQ = "esm.rotary_embeddings.inv_freq"
# where checkpoints keep what transformers reads as a parameter: LayerNorm's legacy gamma/beta
# (transformers 5 saves ESM's that way), and inv_freq per layer (older checkpoints hold a copy
# in each, transformers 5 saves one under a literal `*`; layer 0's is the one read)
ALIASES = {
    "LayerNorm.weight": ("LayerNorm.gamma",),
    "LayerNorm.bias": ("LayerNorm.beta",),
    INV_FREQ: tuple(
        f"esm.encoder.layer.{i}.attention.self.rotary_embeddings.inv_freq" for i in ("*", 0)
    ),
}


def saved(tensors: frozenset[str], name: str) -> bool:
    return name in tensors or name.removeprefix("esm.") in tensors


def saved_alias(tensors: frozenset[str], name: str) -> str | None:
    """The name `tensors` keep parameter `name` under, when not its own."""
    for ending, aliases in ALIASES.items():
        if name.endswith(ending):
            stem = name[: -len(ending)]
            return next((a for a in (stem + e for e in aliases) if saved(tensors, a)), None)
    return None


class RotaryTables(nn.Module):
    """cos and sin of positions 0, 1, ... times `inv_freq`: the checkpoint's where it has one
    (transformers keeps the saved values), else computed from rope_theta."""

    def __init__(self, cfg, dtype: ir.DataType, tensors: frozenset[str]):
        super().__init__()
        kept = saved(tensors, INV_FREQ) or saved_alias(tensors, INV_FREQ) is not None
        self.inv_freq = nn.Parameter([cfg.head_dim // 2], ir.DataType.FLOAT) if kept else None
        exponents = np.arange(0, cfg.head_dim, 2, dtype=np.float32) / cfg.head_dim
        self.computed = (1.0 / cfg.extra["rope_theta"] ** exponents).astype(np.float32)
        self.dtype = dtype

    def forward(self, op, input_ids):
        inv_freq = self.inv_freq
        if inv_freq is None:
            inv_freq = op.Constant(value=ir.tensor(self.computed))
        one = ir.tensor(np.ones([1], np.float32))
        ones = op.ConstantOfShape(op.Shape(input_ids), value=one)
        positions = op.Sub(op.CumSum(ones, 1), 1.0)  # [batch, sequence]
        freqs = op.Mul(op.Unsqueeze(positions, [-1]), inv_freq)
        cos, sin = op.Cos(freqs), op.Sin(freqs)
        if self.dtype != ir.DataType.FLOAT:
            cos, sin = op.Cast(cos, to=self.dtype), op.Cast(sin, to=self.dtype)
        return cos, sin


class RotaryKernel:
    """Rotates q and k (rotate-half layout) before the attention kernel it wraps."""

    def __init__(self, kernel, cos, sin):
        self.kernel, self.cos, self.sin = kernel, cos, sin

    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        q = op.RotaryEmbedding(q, self.cos, self.sin, interleaved=0, num_heads=heads)
        k = op.RotaryEmbedding(k, self.cos, self.sin, interleaved=0, num_heads=heads)
        return self.kernel(op, q, k, v, heads, scale, bias)


class EsmIntermediate(BertIntermediate):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.act = "gelu"  # ESM's own erf gelu, whatever hidden_act says


class EsmLayer(PreNormLayer):
    intermediate_cls = EsmIntermediate


class EsmEncoder(PreNormEncoder):
    layer_cls = EsmLayer
    final_norm_name = "emb_layer_norm_after"


class EsmBody(PreNormBody):
    embeddings_cls = EsmEmbeddings
    encoder_cls = EsmEncoder

    def expected_fusions(self, plan) -> dict[str, int]:
        # the first layer's norm reads the masked embeddings (a product, not a sum)
        return {"skip_norms": 0}

    def attention_kernel(self, op, inputs):
        kernel = super().attention_kernel(op, inputs)
        tables = getattr(self, "rotary_embeddings", None)
        if tables is None:
            return kernel
        return RotaryKernel(kernel, *tables(op, inputs.input_ids))


class EsmLMHead(RobertaLMHead):
    decoder_bias = False


class EsmModel(RobertaModel):
    """Its heads: `lm_head` (a bias-free decoder beside lm_head.bias), RoBERTa's classifier,
    token classification; no question answering."""

    body_cls = EsmBody
    body_name = "esm"
    lm_head_cls = EsmLMHead
    heads = tuple(t for t in TEXT_TASKS if t != "question-answering")

    def __init__(self, cfg, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__(cfg, dtype, ep, task, tensors)
        if cfg.extra["rotary"]:
            self.body.rotary_embeddings = RotaryTables(cfg, dtype, tensors)
        self.tensors = tensors

    def assemblies(self) -> dict[str, Assembly]:
        """Parameters the checkpoint keeps under another name (ALIASES), read from there."""
        found = {}
        for param in self.parameters():
            name = param.name
            alias = None if saved(self.tensors, name) else saved_alias(self.tensors, name)
            if alias is not None:
                part = (alias, tuple(param.shape.dims))
                found[name] = Assembly((part,), lambda arrays: arrays[0])
        return found


FAMILIES = [
    Family(
        "esm",
        EsmModel,
        "protein LM: pre-norm layers, rotary (ESM-2) or learned positions, token-dropout scaling",
        ("facebook/esm2_t6_8M_UR50D", "facebook/esm1b_t33_650M_UR50S"),
        rules=EsmRules(),
        task="feature-extraction",
        category="encoder",
        # old buffers, per-layer rotary copies (layer 0's is read), the contact-prediction head
        # (no task here reads it), a position table rotary models keep unread, a pooler the heads
        # leave, and a tied copy of the word table
        unused=(
            r"(esm\.)?embeddings\.(position_ids|position_embeddings\.weight)",
            r"(esm\.)?encoder\.layer\.(\d+|\*)\.attention\.self\.rotary_embeddings\.inv_freq",
            r"(esm\.)?contact_head\..*",
            r"(esm\.)?pooler\..*",
            r"lm_head\.decoder\.weight",
        ),
        prefix="esm.",
    ),
]

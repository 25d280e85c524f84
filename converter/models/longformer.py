"""Longformer: RoBERTa's embeddings, layers and heads under `longformer`, with sliding-window
attention plus global attention, computed here as two dense masked attentions per layer
(quadratic in the sequence, exact).

- Local rows: each token attends the tokens at most attention_window / 2 (that layer's
  window) either side of it, plus every global token, through query / key / value.
- Global rows: a global token attends every unpadded token through its own projections,
  query_global / key_global / value_global; its output replaces its local one.
- Padded tokens' attention output is zero, as transformers leaves it.

Which tokens are global: the graph input global_attention_mask [batch_size, sequence_length]
(1: global), merged as transformers merges it: attention_mask * (global_attention_mask + 1),
where 2 is global, 1 or more (so 3, 4) local and 0 padding; an attention_mask value of 2 also
marks a token global. The input is required here; an all-zero one is transformers' default for
the base model, the masked LM and token classification. Without it transformers' sequence
classifier puts global attention on the first token and its question-answering head on every
token before the first sep_token_id: feed those masks to get its outputs.

transformers pads the sequence to a multiple of the largest attention window with padded
tokens and cuts its outputs back; padded keys are never attended, so the dense form needs no
padding. `onnx_export` only picks transformers' chunking implementation: the same numbers.
"""

from __future__ import annotations

from typing import ClassVar

import onnx_ir as ir

from converter.components import Linear
from converter.components.encoder_attention import additive_mask, encoder_attention
from converter.config.reader import MAX_LAYERS, MAX_POSITIONS
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import (
    BertAttention,
    BertBody,
    BertEncoder,
    BertLayer,
    BertSelfAttention,
)
from converter.models.roberta import RobertaModel, RobertaRules, roberta_unused
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs


class LongformerRules(RobertaRules):
    def read_extra(self, r) -> dict:
        layers = r.int("num_hidden_layers", hi=MAX_LAYERS)
        window = r.get("attention_window")
        windows = [window] * layers if isinstance(window, int) else window
        if not isinstance(windows, list) or len(windows) != layers:
            raise ConfigError(
                f"'attention_window' = {window!r} must be an integer or a list of one per layer "
                f"({layers})"
            )
        for size in windows:
            if isinstance(size, bool) or not isinstance(size, int):
                raise ConfigError(f"'attention_window' = {window!r}: {size!r} is not an integer")
            if size <= 0 or size % 2 or size > MAX_POSITIONS:
                raise ConfigError(
                    f"'attention_window' = {window!r}: {size} is not a positive even size"
                )
        return {**super().read_extra(r), "one_sided_windows": tuple(w // 2 for w in windows)}


class LongformerMasks:
    """What every layer's attention reads, made once per graph from the two masks."""

    def __init__(self, op, ep, dtype: ir.DataType, attention_mask, global_attention_mask):
        merged = op.Mul(attention_mask, op.Add(global_attention_mask, 1))
        # as transformers reads the merged mask: 0 or less padding, exactly 2 global, else local
        kept, is_global = op.Greater(merged, 0), op.Equal(merged, 2)
        keys = [1, 2]  # [batch, sequence] -> [batch, 1, 1, keys]
        self.local_keys = op.Unsqueeze(op.And(kept, op.Not(is_global)), keys)
        self.global_keys = op.Unsqueeze(is_global, keys)
        self.global_rows = op.Unsqueeze(is_global, [2])
        self.padded_rows = op.Unsqueeze(op.Not(kept), [2])
        length = op.Squeeze(op.Shape(attention_mask, start=1, end=2), [0])
        positions = op.Range(0, length, 1)
        self.distance = op.Abs(op.Sub(op.Unsqueeze(positions, [1]), op.Unsqueeze(positions, [0])))
        # local rows get their window as an additive bias, the one per-query pattern both
        # kernels take; a padded row that sees no key is replaced by 0 in `combine`
        self.local = encoder_attention(op, ep, None, dtype)
        self.global_ = encoder_attention(op, ep, kept, dtype)
        self.dtype, self.windows = dtype, {}

    def window_bias(self, op, one_sided: int):
        """[batch, 1, sequence, sequence]: 0 where a local row sees a key, lowest elsewhere."""
        if one_sided not in self.windows:
            band = op.LessOrEqual(self.distance, one_sided)
            keep = op.Or(op.And(band, self.local_keys), self.global_keys)
            self.windows[one_sided] = additive_mask(op, keep, self.dtype)
        return self.windows[one_sided]

    def combine(self, op, local, global_):
        local = op.Where(self.padded_rows, op.CastLike(0, local), local)
        return op.Where(self.global_rows, global_, local)


class LongformerSelfAttention(BertSelfAttention):
    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        size = cfg.hidden_size
        self.query_global = Linear(size, size, True, dtype)
        self.key_global = Linear(size, size, True, dtype)
        self.value_global = Linear(size, size, True, dtype)

    def forward(self, op, x, masks: LongformerMasks, bias=None):
        heads, scale = self.heads, self.scale
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        local = masks.local(op, q, k, v, heads, scale, bias)
        q, k, v = self.query_global(op, x), self.key_global(op, x), self.value_global(op, x)
        return masks.combine(op, local, masks.global_(op, q, k, v, heads, scale))


class LongformerAttention(BertAttention):
    self_attention_cls = LongformerSelfAttention


class LongformerLayer(BertLayer):
    attention_cls = LongformerAttention

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 2 if plan.has(ENCODER_MHA) else 0,  # local and global
        }


class LongformerEncoder(BertEncoder):
    layer_cls = LongformerLayer

    def __init__(self, cfg, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.windows = cfg.extra["one_sided_windows"]

    def forward(self, op, x, masks: LongformerMasks, bias=None):
        for layer, window in zip(self.layer, self.windows, strict=True):
            x = layer(op, x, masks, masks.window_bias(op, window))
        return x


class LongformerBody(BertBody):
    encoder_cls = LongformerEncoder

    def attention_kernel(self, op, inputs: TextInputs):
        global_mask = inputs.extra["global_attention_mask"]
        return LongformerMasks(op, self.ep, self.dtype, inputs.attention_mask, global_mask)


class LongformerModel(RobertaModel):
    body_cls = LongformerBody
    body_name = "longformer"
    extra_inputs: ClassVar[dict] = {"global_attention_mask": (ir.DataType.INT64, [BATCH, SEQUENCE])}


FAMILIES = [
    Family(
        "longformer",
        LongformerModel,
        "RoBERTa layers with sliding-window and global attention (global_attention_mask input)",
        ("allenai/longformer-base-4096",),
        rules=LongformerRules(),
        task="feature-extraction",
        category="encoder",
        unused=roberta_unused("longformer"),
        prefix="longformer.",
    ),
]

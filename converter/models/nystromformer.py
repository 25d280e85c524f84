"""Nyströmformer: BERT's layers under `nystromformer` with Nyström attention in place of softmax
attention (converter/components/nystrom_attention.py) wherever num_landmarks differs from
segment_means_seq_len (where they are equal, transformers runs plain softmax attention, at any
length; Nyström attention runs at segment_means_seq_len tokens only, as padded to), plus a
depthwise convolution over each head's values along the sequence (conv_kernel_size) added to
the attention's output. Positions count from row 2 of a table of max_position_embeddings + 2
rows, for every token (padding included); no pooler. Heads: BERT's masked LM (`cls`), a
two-layer `classifier` on the first token (hidden_act between), BERT's token classifier and
question answering."""

from __future__ import annotations

import onnx_ir as ir

from converter.components.conv2d import Conv2d
from converter.components.nystrom_attention import NystromAttention
from converter.components.seq2seq_attention import heads_first, heads_last
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.execution_providers import ENCODER_MHA
from converter.models.encoder import (
    BertAttention,
    BertBody,
    BertEmbeddings,
    BertEncoder,
    BertLayer,
    BertSelfAttention,
    Table,
    position_ids,
)
from converter.models.roformer import RoFormerModel
from converter.registry import Family
from converter.tasks.encoding import TextInputs

FIRST_POSITION = 2  # transformers' position ids are arange(sequence) + 2


class NystromformerRules(EncoderRules):
    def read_extra(self, r) -> dict:
        if r.bool("inv_coeff_init_option", False):
            r.refuse(
                "inv_coeff_init_option",
                "transformers 5.24 reads its coefficient as config['inv_init_coeff_option'], "
                "which fails (the config is not subscriptable): only the original start of the "
                "iterative inverse runs there",
            )
        conv = r.int("conv_kernel_size")
        if conv % 2 == 0:
            r.refuse(
                "conv_kernel_size",
                "an even kernel's padded convolution gives one more position than the "
                "sequence (transformers fails adding it)",
            )
        sequence, landmarks = r.int("segment_means_seq_len"), r.int("num_landmarks")
        if sequence % landmarks:
            r.refuse("num_landmarks", f"segment_means_seq_len = {sequence} is not a multiple of it")
        return {
            "tied": r.bool("tie_word_embeddings", True),
            "conv_kernel_size": conv,
            "landmarks": landmarks,
            # tokens per landmark; 1 (equal counts): transformers runs softmax attention
            "segment": sequence // landmarks,
        }


class NystromformerEmbeddings(BertEmbeddings):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        # the table holds the two rows before the first position too
        rows = cfg.max_position_embeddings + FIRST_POSITION
        self.position_embeddings = Table(rows, cfg.embedding_size, dtype)

    def forward(self, op, inputs: TextInputs):
        positions = op.Add(position_ids(op, self.cfg, inputs.input_ids), FIRST_POSITION)
        x = op.Add(self.token_sum(op, inputs), self.position_embeddings(op, positions))
        return self.LayerNorm(op, x)


class NystromformerSelfAttention(BertSelfAttention):
    """BERT's projections and the body's kernel, plus `conv`: each head's values convolved
    along the sequence (zero-padded, no bias; padded tokens' values included, as transformers
    does)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        size, heads = cfg.extra["conv_kernel_size"], cfg.num_attention_heads
        self.conv = Conv2d(
            heads, heads, (size, 1), dtype, padding=(size // 2, 0), groups=heads, bias=False
        )
        self.head_dim = cfg.head_dim

    def forward(self, op, x, kernel, bias=None):
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        out = kernel(op, q, k, v, self.heads, self.scale, bias)
        values = heads_first(op, v, self.heads, self.head_dim)
        return op.Add(out, heads_last(op, self.conv(op, values)))


class NystromformerAttention(BertAttention):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        setattr(self, "self", NystromformerSelfAttention(cfg, dtype))  # noqa: B010


class NystromformerLayer(BertLayer):
    attention_cls = NystromformerAttention

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.softmax = cfg.extra["segment"] == 1

    def expected_fusions(self, plan) -> dict[str, int]:
        # Nyström attention is no MultiHeadAttention
        found = super().expected_fusions(plan)
        return found if self.softmax else {**found, ENCODER_MHA: 0}


class NystromformerEncoder(BertEncoder):
    layer_cls = NystromformerLayer


class NystromformerBody(BertBody):
    embeddings_cls = NystromformerEmbeddings
    encoder_cls = NystromformerEncoder

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled)
        self.cfg = cfg

    def attention_kernel(self, op, inputs: TextInputs):
        extra = self.cfg.extra
        if extra["segment"] == 1:
            return super().attention_kernel(op, inputs)
        return NystromAttention(
            op,
            inputs.attention_mask,
            self.dtype,
            self.cfg.head_dim,
            extra["landmarks"],
            extra["segment"],
        )


class NystromformerModel(RoFormerModel):
    """RoFormer's heads (BERT's `cls` with the decoder's own bias when untied, the two-layer
    `classifier` with hidden_act), no pooler."""

    body_cls = NystromformerBody
    body_name = "nystromformer"

    @staticmethod
    def reference_key_mask(config) -> bool:
        """Whether transformers is handed the padding mask as the [batch, 1, 1, keys] additive
        mask its landmark scores [batch, heads, landmarks, keys] add: transformers 5.24 builds
        [batch, 1, queries, keys] from a 2-D mask, which they cannot broadcast with."""
        return config.num_landmarks != config.segment_means_seq_len


FAMILIES = [
    Family(
        "nystromformer",
        NystromformerModel,
        "BERT layers with Nyström (landmark) attention and a depthwise convolution on values",
        ("uw-madison/nystromformer-512",),
        rules=NystromformerRules(),
        task="feature-extraction",
        category="encoder",
        # buffers, the heads of other tasks and whichever masked-LM bias the tying leaves unread
        unused=(
            r"(nystromformer\.)?embeddings\.(position_ids|token_type_ids)",
            r"cls\..*",
            r"classifier\..*",
            r"qa_outputs\..*",
        ),
        prefix="nystromformer.",
    ),
]

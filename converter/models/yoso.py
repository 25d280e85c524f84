"""YOSO: Nyströmformer's layout (BERT's post-norm layers, positions from row 2 of a table of
max_position_embeddings + 2 rows, no pooler, RoFormer's heads) under `yoso`, with YOSO's
attention in its expected form (converter/components/collision_attention.py), the one
transformers runs on CPU. With conv_window set, each head's values, zeroed at padded tokens,
are convolved along the sequence (`conv`, depthwise, no bias) and added to the attention's
output. The LSH-sampling path (use_expectation false) is refused: transformers runs it only
through its CUDA kernels, on random hashes drawn at every call. num_hash, use_fast_hash and
lsh_backward belong to that path and to training."""

from __future__ import annotations

import onnx_ir as ir

from converter.components.collision_attention import ExpectedCollisionAttention
from converter.components.conv2d import Conv2d
from converter.components.seq2seq_attention import heads_first, heads_last
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.execution_providers import ENCODER_MHA
from converter.models.encoder import (
    BertAttention,
    BertBody,
    BertEncoder,
    BertLayer,
    BertSelfAttention,
)
from converter.models.nystromformer import NystromformerEmbeddings
from converter.models.roformer import RoFormerModel
from converter.registry import Family
from converter.tasks.encoding import TextInputs


class YosoRules(EncoderRules):
    def read_extra(self, r: ConfigReader) -> dict:
        if not r.bool("use_expectation", True):
            r.refuse(
                "use_expectation",
                "the LSH-sampling attention runs in transformers only through its CUDA kernels "
                "(kernels-community/yoso), on random hashes drawn at every call; the expected "
                "collision rate (use_expectation true) is what runs on CPU",
            )
        conv = r.raw.get("conv_window")
        if conv is not None and r.int("conv_window") % 2 == 0:
            r.refuse(
                "conv_window",
                "an even window's padded convolution gives one more position than the "
                "sequence (transformers fails adding it)",
            )
        return {
            "tied": r.bool("tie_word_embeddings", True),
            "hash_code_len": r.int("hash_code_len"),
            "conv_window": conv,
        }


class YosoSelfAttention(BertSelfAttention):
    """BERT's projections and YOSO's kernel, plus (conv_window) the values' convolution."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        window, heads = cfg.extra["conv_window"], cfg.num_attention_heads
        self.conv = (
            None
            if window is None
            else Conv2d(
                heads, heads, (window, 1), dtype, padding=(window // 2, 0), groups=heads, bias=False
            )
        )
        self.head_dim = cfg.head_dim

    def forward(self, op, x, kernel: ExpectedCollisionAttention, bias=None):
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        out = kernel(op, q, k, v, self.heads, self.scale, bias)
        if self.conv is None:
            return out
        values = op.Mul(heads_first(op, v, self.heads, self.head_dim), kernel.value_mask)
        return op.Add(out, heads_last(op, self.conv(op, values)))


class YosoAttention(BertAttention):
    self_attention_cls = YosoSelfAttention


class YosoLayer(BertLayer):
    attention_cls = YosoAttention

    def expected_fusions(self, plan) -> dict[str, int]:
        return {**super().expected_fusions(plan), ENCODER_MHA: 0}  # no MultiHeadAttention


class YosoEncoder(BertEncoder):
    layer_cls = YosoLayer


class YosoBody(BertBody):
    embeddings_cls = NystromformerEmbeddings
    encoder_cls = YosoEncoder

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled)
        self.cfg = cfg

    def attention_kernel(self, op, inputs: TextInputs):
        cfg = self.cfg
        return ExpectedCollisionAttention(
            op, inputs.attention_mask, self.dtype, cfg.head_dim, cfg.extra["hash_code_len"]
        )


class YosoModel(RoFormerModel):
    """RoFormer's heads (BERT's `cls` with the decoder's own bias when untied, the two-layer
    `classifier` with hidden_act), no pooler."""

    body_cls = YosoBody
    body_name = "yoso"


FAMILIES = [
    Family(
        "yoso",
        YosoModel,
        "BERT layers with YOSO attention in its expected form: values weighted by "
        "(1 - arccos(q.k) / pi) ** hash_code_len over unit queries and keys",
        ("uw-madison/yoso-4096",),
        rules=YosoRules(),
        task="feature-extraction",
        category="encoder",
        # buffers, the heads of other tasks and whichever masked-LM bias the tying leaves unread
        unused=(
            r"(yoso\.)?embeddings\.(position_ids|token_type_ids)",
            r"cls\..*",
            r"classifier\..*",
            r"qa_outputs\..*",
        ),
        prefix="yoso.",
    ),
]

"""Perceiver (text): UTF-8 byte embeddings plus positions are read once by a small array of
learned latents (cross-attention, which masks the padded bytes), the latents then run
`num_blocks` passes of the same `num_self_attends_per_block` self-attention layers (weights
shared across passes), and a decoder's learned queries cross-attend the latents (no mask).

Every layer is pre-norm: query LayerNorm (`layernorm1`; a cross-attention also norms its keys'
source, `layernorm2`), attention whose queries / keys may be narrower than the values
(`qk_channels`, `v_channels`), `output.dense`, the query residual where the layer keeps one,
then x + mlp(layernorm(x)). transformers' LayerNorms take torch's default eps (1e-5), not
`layer_norm_eps`.

Heads (transformers fixes the decoders in code, not in config.json):
  fill-mask            max_position_embeddings queries (the decoder's position table, d_model
                       wide) over the latents with 8 heads of 32 query/key channels, no query
                       residual; logits by the tied byte table plus `embedding_decoder.bias`:
                       [batch, max_position_embeddings, vocab] whatever the input length, as
                       transformers gives them
  text-classification  one learned query (d_latents wide, one head, with its residual), then
                       `final_layer` to the labels
The image classifiers (learned-position conv1x1, Fourier-feature pixels, conv + maxpool
preprocessors), optical flow and multimodal autoencoding are not built.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules, _num_labels
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import Table
from converter.registry import Family
from converter.tasks.encoding import BATCH, TextInputs

TORCH_LAYER_NORM_EPS = 1e-5
# PerceiverForMaskedLM's decoder, fixed in transformers' code
MLM_DECODER_HEADS, MLM_DECODER_QK_CHANNELS = 8, 8 * 32


class PerceiverRules(EncoderRules):
    def read(self, r: ConfigReader) -> EncoderConfig:
        d_model, d_latents = r.int("d_model"), r.int("d_latents")
        self_heads = r.int("num_self_attention_heads")
        cross_heads = r.int("num_cross_attention_heads")
        for key, heads in (
            ("num_self_attention_heads", self_heads),
            ("num_cross_attention_heads", cross_heads),
        ):
            if d_latents % heads:
                r.refuse(key, f"'d_latents' = {d_latents} is not divisible by it")
        shape = r.str("cross_attention_shape_for_attention", default="kv")
        if shape not in ("q", "kv"):
            r.refuse("cross_attention_shape_for_attention", "transformers reads 'q' or 'kv'")
        qk = r.int("qk_channels", default=0, lo=0, hi=MAX_DIM) or None
        v = r.int("v_channels", default=0, lo=0, hi=MAX_DIM) or None
        if (v or qk or d_latents) != d_latents:
            # transformers' self-attention output is v's width, added to the latents
            key = "v_channels" if v else "qk_channels"
            r.refuse(key, f"the self-attention values must be 'd_latents' = {d_latents} wide")
        blocks = r.int("num_blocks", hi=MAX_LAYERS)
        per_block = r.int("num_self_attends_per_block", hi=MAX_LAYERS)
        self_widening = r.int("self_attention_widening_factor", default=1, hi=64)
        return EncoderConfig(
            model_type=r.model_type,
            vocab_size=r.int("vocab_size", hi=MAX_VOCAB),
            hidden_size=d_latents,
            intermediate_size=d_latents * self_widening,
            num_hidden_layers=blocks * per_block,
            num_attention_heads=self_heads,
            head_dim=d_latents // self_heads,
            max_position_embeddings=r.int("max_position_embeddings", hi=MAX_POSITIONS),
            type_vocab_size=0,
            token_type_input=False,
            norm_eps=TORCH_LAYER_NORM_EPS,
            activation=r.str("hidden_act", default="gelu"),
            pad_token_id=None,
            position_offset=0,
            num_labels=_num_labels(r),
            embedding_size=d_model,
            extra={
                "num_latents": r.int("num_latents", hi=MAX_POSITIONS),
                "num_blocks": blocks,
                "num_self_attends_per_block": per_block,
                "num_cross_attention_heads": cross_heads,
                "qk_channels": qk,
                "v_channels": v,
                "cross_qk_from_kv": shape == "kv",
                "cross_attention_widening_factor": r.int(
                    "cross_attention_widening_factor", default=1, hi=64
                ),
                "use_query_residual": r.bool("use_query_residual", True),
            },
        )


class PerceiverSelfAttention(nn.Module):
    """Norms, projections and the attention (transformers' `attention.self`); `kv_dim` None:
    self-attention, the keys from the normed queries' source."""

    def __init__(self, q_dim, kv_dim, qk, v, heads, dtype: ir.DataType):
        super().__init__()
        if qk % heads or v % heads:
            raise ConfigError(f"attention channels {qk} / {v} are not divisible by {heads} heads")
        self.layernorm1 = LayerNorm(q_dim, TORCH_LAYER_NORM_EPS, dtype)
        cross = kv_dim is not None
        self.layernorm2 = LayerNorm(kv_dim, TORCH_LAYER_NORM_EPS, dtype) if cross else None
        self.query = Linear(q_dim, qk, True, dtype)
        self.key = Linear(kv_dim if cross else q_dim, qk, True, dtype)
        self.value = Linear(kv_dim if cross else q_dim, v, True, dtype)
        self.heads, self.scale = heads, (qk // heads) ** -0.5

    def forward(self, op, x, source, kernel):
        normed = self.layernorm1(op, x)
        source = normed if self.layernorm2 is None else self.layernorm2(op, source)
        q, k, v = self.query(op, normed), self.key(op, source), self.value(op, source)
        return kernel(op, q, k, v, self.heads, self.scale)


class PerceiverOutput(nn.Module):
    def __init__(self, in_size: int, out_size: int, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(in_size, out_size, True, dtype)

    def forward(self, op, x):
        return self.dense(op, x)


class PerceiverAttention(nn.Module):
    def __init__(self, q_dim, kv_dim, qk, v, heads, residual: bool, dtype: ir.DataType):
        super().__init__()
        setattr(  # noqa: B010 (`self` is the checkpoint's name)
            self, "self", PerceiverSelfAttention(q_dim, kv_dim, qk, v, heads, dtype)
        )
        # a cross-attention projects back to the queries' width, a self-attention to v's
        self.output = PerceiverOutput(v, q_dim if kv_dim is not None else v, dtype)
        self.residual = residual

    def forward(self, op, x, source, kernel):
        out = self.output(op, self.self(op, x, source, kernel))
        return op.Add(out, x) if self.residual else out


class PerceiverMLP(nn.Module):
    def __init__(self, size: int, widening: int, act: str, dtype: ir.DataType):
        super().__init__()
        self.dense1 = Linear(size, size * widening, True, dtype)
        self.dense2 = Linear(size * widening, size, True, dtype)
        self.act = act

    def forward(self, op, x):
        return self.dense2(op, activation(op, self.act, self.dense1(op, x)))


class PerceiverLayer(nn.Module):
    """Attention, then x + mlp(layernorm(x))."""

    def __init__(self, cfg: EncoderConfig, dtype, q_dim, kv_dim, qk, v, heads, widening, residual):
        super().__init__()
        v = v or qk
        self.attention = PerceiverAttention(q_dim, kv_dim, qk, v, heads, residual, dtype)
        self.layernorm = LayerNorm(q_dim, TORCH_LAYER_NORM_EPS, dtype)
        self.mlp = PerceiverMLP(q_dim, widening, cfg.activation, dtype)

    def forward(self, op, x, source, kernel):
        x = self.attention(op, x, source, kernel)
        return op.Add(self.mlp(op, self.layernorm(op, x)), x)


class PerceiverEncoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        extra, d_latents, d_model = cfg.extra, cfg.hidden_size, cfg.embedding_size
        cross_qk = extra["qk_channels"] or (d_model if extra["cross_qk_from_kv"] else d_latents)
        self.cross_attention = PerceiverLayer(
            cfg,
            dtype,
            d_latents,
            d_model,
            cross_qk,
            extra["v_channels"],
            extra["num_cross_attention_heads"],
            extra["cross_attention_widening_factor"],
            extra["use_query_residual"],
        )
        self_qk = extra["qk_channels"] or d_latents
        self.self_attends = nn.ModuleList(
            [
                PerceiverLayer(
                    cfg,
                    dtype,
                    d_latents,
                    None,
                    self_qk,
                    extra["v_channels"],
                    cfg.num_attention_heads,
                    cfg.intermediate_size // d_latents,
                    True,
                )
                for _ in range(extra["num_self_attends_per_block"])
            ]
        )
        self.blocks = extra["num_blocks"]

    def forward(self, op, latents, inputs, masked_kernel, kernel):
        x = self.cross_attention(op, latents, inputs, masked_kernel)
        for _ in range(self.blocks):  # the same layers, every pass
            for layer in self.self_attends:
                x = layer(op, x, None, kernel)
        return x


class Latents(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.latents = nn.Parameter([cfg.extra["num_latents"], cfg.hidden_size], dtype)

    def forward(self, op, batch):
        return batched(op, self.latents, batch)


def batched(op, table, batch):
    """A [rows, width] table repeated for every row of the batch: [batch, rows, width]."""
    return op.Expand(op.Unsqueeze(table, [0]), op.Concat(batch, op.Shape(table), axis=0))


class TextPreprocessor(nn.Module):
    """Byte embeddings plus positions 0 .. length - 1."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.embeddings = Table(cfg.vocab_size, cfg.embedding_size, dtype)
        self.position_embeddings = Table(cfg.max_position_embeddings, cfg.embedding_size, dtype)

    def forward(self, op, input_ids):
        length = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
        positions = self.position_embeddings(op, op.Range(0, length, 1))
        return op.Add(self.embeddings(op, input_ids), positions)


class PositionQueries(nn.Module):
    """A decoder's learned queries (`output_position_encodings.position_embeddings`)."""

    def __init__(self, rows: int, width: int, dtype: ir.DataType):
        super().__init__()
        self.position_embeddings = nn.Parameter([rows, width], dtype)

    def forward(self, op, batch):
        return batched(op, self.position_embeddings, batch)


class BasicDecoder(nn.Module):
    """Queries cross-attending the latents (no mask), then `final_layer` where it projects."""

    def __init__(self, cfg, dtype, rows, width, qk, v, heads, residual, labels: int | None):
        super().__init__()
        self.output_position_encodings = PositionQueries(rows, width, dtype)
        self.decoding_cross_attention = PerceiverLayer(
            cfg, dtype, width, cfg.hidden_size, qk, v, heads, 1, residual
        )
        self.final_layer = None if labels is None else Linear(width, labels, True, dtype)

    def forward(self, op, latents, batch, kernel):
        queries = self.output_position_encodings(op, batch)
        x = self.decoding_cross_attention(op, queries, latents, kernel)
        return x if self.final_layer is None else self.final_layer(op, x)


class ClassificationDecoder(nn.Module):
    """`decoder.decoder`: one query, d_latents wide, one head."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        width = cfg.hidden_size
        self.decoder = BasicDecoder(cfg, dtype, 1, width, width, None, 1, True, cfg.num_labels)

    def forward(self, op, latents, batch, kernel):
        return op.Squeeze(self.decoder(op, latents, batch, kernel), [1])


class PerceiverBody(nn.Module):
    """`perceiver`: the preprocessor, latents, encoder and the task's decoder."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, task: str):
        super().__init__()
        self.input_preprocessor = TextPreprocessor(cfg, dtype)
        self.embeddings = Latents(cfg, dtype)
        self.encoder = PerceiverEncoder(cfg, dtype)
        d_model = cfg.embedding_size
        self.decoder = (
            BasicDecoder(
                cfg,
                dtype,
                cfg.max_position_embeddings,
                d_model,
                MLM_DECODER_QK_CHANNELS,
                d_model,
                MLM_DECODER_HEADS,
                False,
                None,
            )
            if task == "fill-mask"
            else ClassificationDecoder(cfg, dtype)
        )
        self.ep, self.dtype, self.cfg = ep, dtype, cfg

    def forward(self, op, inputs: TextInputs):
        batch = op.Shape(inputs.input_ids, start=0, end=1)
        masked = encoder_attention(
            op, self.ep, inputs.attention_mask, self.dtype, queries=self.cfg.extra["num_latents"]
        )
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        embedded = self.input_preprocessor(op, inputs.input_ids)
        latents = self.encoder(op, self.embeddings(op, batch), embedded, masked, kernel)
        return self.decoder(op, latents, batch, kernel)


class EmbeddingDecoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.bias = nn.Parameter([cfg.vocab_size], dtype)

    def forward(self, op, hidden, table):
        return op.Add(op.MatMul(hidden, op.Transpose(table, perm=[1, 0])), self.bias)


class PerceiverTextModel(nn.Module):
    heads = ("fill-mask", "text-classification")

    def __init__(self, cfg: EncoderConfig, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(
                f"perceiver converts its text heads ({', '.join(self.heads)}), not {task}: the "
                "image classifiers' preprocessors (learned-position conv1x1, Fourier-feature "
                "pixels, conv+maxpool) are not built"
            )
        self.cfg, self.task = cfg, task
        self.perceiver = PerceiverBody(cfg, dtype, ep, task)
        self.embedding_decoder = EmbeddingDecoder(cfg, dtype) if task == "fill-mask" else None

    def expected_fusions(self, plan) -> dict[str, int]:
        extra = self.cfg.extra
        passes = extra["num_blocks"] * extra["num_self_attends_per_block"]
        # the encoder's cross-attention, every pass of the self-attention layers, the decoder's
        attentions = 2 + passes
        # a layer's MLP norm reads a residual sum where its attention keeps the query residual;
        # every self-attention's query norm and the decoder's key norm read the previous
        # layer's output sum. The bytes + positions sum broadcasts the positions: not fused.
        residuals = int(extra["use_query_residual"]) + passes + int(self.task != "fill-mask")
        norms = residuals + passes + 1
        return {
            "skip_norms": norms if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: attentions if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, inputs: TextInputs) -> dict:
        cfg, out = self.cfg, self.perceiver(op, inputs)
        if self.task == "text-classification":
            return {"logits": (out, [BATCH, cfg.num_labels])}
        table = self.perceiver.input_preprocessor.embeddings.weight
        logits = self.embedding_decoder(op, out, table)
        return {"logits": (logits, [BATCH, cfg.max_position_embeddings, cfg.vocab_size])}


FAMILIES = [
    Family(
        "perceiver",
        PerceiverTextModel,
        "learned latents cross-attend the byte embeddings once, shared self-attention blocks "
        "over the latents, a decoder's learned queries cross-attend them back (text heads; "
        "the image classifiers' preprocessors are not built)",
        ("deepmind/language-perceiver",),
        rules=PerceiverRules(),
        task="fill-mask",
        category="encoder",
    ),
]

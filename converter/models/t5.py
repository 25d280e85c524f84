"""T5, mT5 and UMT5: the encoder-decoder contract of converter/models/seq2seq.py in T5's layout.

What differs from BART:
- Checkpoint names: `shared`, `encoder.block.{i}.layer.{j}` (0: SelfAttention, then in the
  decoder 1: EncDecAttention, last: DenseReluDense, each with its own `layer_norm`), a
  `final_layer_norm` per stack, and `lm_head` (no base-model prefix).
- Norms are T5LayerNorm: RMS without bias or mean, before every sublayer and once after each
  stack. No position embeddings, no embedding scale, no embedding norm.
- Positions are a learned per-head bias over bucketed relative distances
  (components/relative_buckets.py): bidirectional in the encoder, causal in the decoder, whose
  new tokens sit at past .. past + new. The first layer's self-attention owns the table and the
  others reuse its bias (UMT5: every layer owns one); cross-attention has none.
- Scores are not scaled (T5 folds 1/sqrt(d_kv) into its initialization); no projection biases;
  the heads' width is num_heads * d_kv, which need not be d_model.
- The feed-forward is wi -> act -> wo, or gated: act(wi_0) * wi_1 -> wo (feed_forward_proj).
- The LM head is `lm_head` where the checkpoint has one (T5 v1.1, mT5), else the shared table;
  its input is scaled by d_model ** -0.5 where transformers does (`scale_decoder_outputs`:
  original T5; mT5 never).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import RMSNorm, activation
from converter.components.embedding import Embedding
from converter.components.encoder_attention import encoder_attention
from converter.components.linear import Linear
from converter.components.relative_buckets import RelativeBias, pairwise_bias
from converter.components.seq2seq_attention import Seq2SeqAttention, Steps
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_VOCAB, ConfigReader
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.decoder import tied_logits
from converter.models.seq2seq import Seq2SeqModel
from converter.registry import Family

HEAD = "lm_head.weight"


@dataclass(frozen=True)
class T5Settings:
    """T5's own settings (`cfg.extra["t5"]`)."""

    buckets: int  # relative_attention_num_buckets
    max_distance: int  # relative_attention_max_distance
    gated: bool  # feed_forward_proj "gated-...": act(wi_0) * wi_1
    bias_per_layer: bool  # UMT5: every self-attention owns its relative table
    scale_logits: bool  # the LM head reads hidden * d_model ** -0.5


def t5_settings(cfg: Seq2SeqConfig) -> T5Settings:
    return cfg.extra["t5"]


class T5Rules(Seq2SeqRules):
    """T5's keys (d_model, d_kv, d_ff, num_layers, num_decoder_layers, num_heads,
    layer_norm_epsilon, feed_forward_proj, relative_attention_*). `scaled` is how transformers
    decides the LM head's input scale: "tie" (T5, UMT5: scale_decoder_outputs when config.json
    has it, else unless tie_word_embeddings is false), "tied" (tie_word_embeddings, true
    unless stated) or "never" (mT5)."""

    def __init__(self, scaled: str = "tie", bias_per_layer: bool = False) -> None:
        super().__init__(pre_norm=True, embedding_norm=False, position_kind="relative")
        self.scaled, self.bias_per_layer = scaled, bias_per_layer

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        self.refuse_unsupported(r)
        d_model, heads = r.int("d_model"), r.int("num_heads")
        layers = r.int("num_layers", hi=MAX_LAYERS)
        vocab = r.int("vocab_size", hi=MAX_VOCAB)
        d_ff = r.int("d_ff", hi=MAX_DIM * 4)
        act, gated = self.feed_forward(r)
        pad = r.int("pad_token_id", lo=0, hi=vocab - 1)
        eos = r.token_ids("eos_token_id", vocab)
        start = r.int("decoder_start_token_id", default=pad, lo=0, hi=vocab - 1)
        settings = T5Settings(
            buckets=r.int("relative_attention_num_buckets"),
            max_distance=r.int("relative_attention_max_distance"),
            gated=gated,
            bias_per_layer=self.bias_per_layer,
            scale_logits=self.scale_logits(r),
        )
        return Seq2SeqConfig(
            model_type=r.model_type,
            vocab_size=vocab,
            d_model=d_model,
            encoder_layers=layers,
            decoder_layers=r.int("num_decoder_layers", default=layers, hi=MAX_LAYERS),
            encoder_heads=heads,
            decoder_heads=heads,
            encoder_kv_heads=heads,
            decoder_kv_heads=heads,
            head_dim=r.int("d_kv"),
            encoder_ffn_dim=d_ff,
            decoder_ffn_dim=d_ff,
            activation=act,
            norm_type="rms",
            norm_eps=r.float("layer_norm_epsilon"),
            pre_norm=True,
            embedding_norm=False,
            scale_embedding=False,
            position_kind="relative",
            max_positions=0,  # relative positions: no table bounds the length
            position_offset=0,
            pad_token_id=pad,
            eos_token_id=eos[0] if eos else None,
            decoder_start_token_id=start,
            tie_word_embeddings=True,  # the model unties it where the checkpoint has lm_head
            extra={"t5": settings},
        )

    def feed_forward(self, r: ConfigReader) -> tuple[str, bool]:
        return feed_forward(r)

    def scale_logits(self, r: ConfigReader) -> bool:
        if self.scaled == "never":
            return False
        if self.scaled == "tied":
            return r.bool("tie_word_embeddings", True)
        if r.has("scale_decoder_outputs"):
            return r.bool("scale_decoder_outputs", True)
        return r.raw.get("tie_word_embeddings") is not False


def feed_forward(r: ConfigReader) -> tuple[str, bool]:
    """(activation, gated) as T5Config derives them from feed_forward_proj ("relu",
    "gated-gelu", ...; "gated-gelu" is tanh-GELU), unless config.json states dense_act_fn and
    is_gated_act themselves (they win in transformers too)."""
    proj = r.str("feed_forward_proj")
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise ConfigError(f"'feed_forward_proj' = {proj!r} is neither 'ACT' nor 'gated-ACT'")
    act = "gelu_new" if proj == "gated-gelu" else parts[-1]
    return r.str("dense_act_fn", default=act), r.bool("is_gated_act", parts[0] == "gated")


class T5Attention(Seq2SeqAttention):
    """q, k, v, o without biases, unscaled scores; `relative_attention_bias` where the layer
    owns the relative table."""

    names = ("q", "k", "v", "o")

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, relative: RelativeBias | None):
        no_bias = (False, False, False, False)
        super().__init__(cfg.d_model, cfg.decoder_heads, cfg.head_dim, dtype, no_bias, 1.0)
        self.relative_attention_bias = relative

    def position_bias(self, op, queries, keys):
        return pairwise_bias(op, self.relative_attention_bias, queries, keys)


def relative_bias(cfg: Seq2SeqConfig, dtype: ir.DataType, bidirectional: bool) -> RelativeBias:
    s = t5_settings(cfg)
    return RelativeBias(s.buckets, cfg.decoder_heads, s.max_distance, bidirectional, dtype)


class T5LayerSelfAttention(Steps):
    """x + attention(layer_norm(x)) under the checkpoint's `attention_name`. The layer that
    owns the relative table computes the bias from the stack's `context` (the arguments of its
    attention's `position_bias`); the others reuse the one handed down."""

    attention_name = "SelfAttention"
    attention_cls = T5Attention

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, decoder: bool, owns_bias: bool):
        super().__init__()
        relative = relative_bias(cfg, dtype, not decoder) if owns_bias else None
        setattr(self, self.attention_name, self.attention_cls(cfg, dtype, relative))
        self.layer_norm = RMSNorm(cfg.d_model, cfg.norm_eps, dtype)

    @property
    def attention(self) -> T5Attention:
        return getattr(self, self.attention_name)

    def _bias(self, op, context, bias):
        if self.attention.relative_attention_bias is None:
            return bias
        return self.attention(op, "position_bias", *context)

    def encoder(self, op, x, kernel, context, bias):
        bias = self._bias(op, context, bias)
        return op.Add(x, self.attend(op, self.layer_norm(op, x), kernel, context, bias)), bias

    def attend(self, op, h, kernel, context, bias):
        return self.attention(op, "encoder", h, kernel, bias)

    def cached(self, op, x, past, kernel, context, bias):
        bias = self._bias(op, context, bias)
        h = self.layer_norm(op, x)
        y, key, value = self.attention(op, "cached", h, *past, kernel, bias)
        return op.Add(x, y), key, value, bias


class T5LayerCrossAttention(Steps):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.EncDecAttention = T5Attention(cfg, dtype, None)
        self.layer_norm = RMSNorm(cfg.d_model, cfg.norm_eps, dtype)

    def key_value(self, op, encoder_hidden_states):
        return self.EncDecAttention(op, "key_value", encoder_hidden_states)

    def cross(self, op, x, key, value, kernel):
        y = self.EncDecAttention(op, "cross", self.layer_norm(op, x), key, value, kernel)
        return op.Add(x, y)


class T5DenseActDense(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.wi = Linear(cfg.d_model, cfg.decoder_ffn_dim, False, dtype)
        self.wo = Linear(cfg.decoder_ffn_dim, cfg.d_model, False, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.wo(op, activation(op, self.act, self.wi(op, x)))


class T5DenseGatedActDense(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.wi_0 = Linear(cfg.d_model, cfg.decoder_ffn_dim, False, dtype)
        self.wi_1 = Linear(cfg.d_model, cfg.decoder_ffn_dim, False, dtype)
        self.wo = Linear(cfg.decoder_ffn_dim, cfg.d_model, False, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        gate = activation(op, self.act, self.wi_0(op, x))
        return self.wo(op, op.Mul(gate, self.wi_1(op, x)))


class T5LayerFF(nn.Module):
    """x + mlp(layer_norm(x)), the mlp under `mlp_name`."""

    mlp_name = "DenseReluDense"

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        setattr(self, self.mlp_name, self.make_mlp(cfg, dtype))
        self.layer_norm = RMSNorm(cfg.d_model, cfg.norm_eps, dtype)

    def make_mlp(self, cfg: Seq2SeqConfig, dtype: ir.DataType) -> nn.Module:
        gated = t5_settings(cfg).gated
        return (T5DenseGatedActDense if gated else T5DenseActDense)(cfg, dtype)

    def forward(self, op, x):
        return op.Add(x, getattr(self, self.mlp_name)(op, self.layer_norm(op, x)))


class T5Block(Steps):
    """`layer`: self-attention, (decoder) cross-attention, feed-forward."""

    def __init__(self, cfg, dtype, decoder: bool, owns_bias: bool, self_attention_cls, ff):
        super().__init__()
        sublayers = [self_attention_cls(cfg, dtype, decoder, owns_bias)]
        if decoder:
            sublayers.append(T5LayerCrossAttention(cfg, dtype))
        sublayers.append(ff)
        self.layer = nn.ModuleList(sublayers)
        self.sublayers = len(sublayers)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: (self.sublayers - 1) * int(plan.has(ENCODER_MHA))}

    def encoder(self, op, x, kernel, context, bias):
        x, bias = self.layer[0](op, "encoder", x, kernel, context, bias)
        return self.layer[1](op, x), bias

    def key_value(self, op, encoder_hidden_states):
        return self.layer[1](op, "key_value", encoder_hidden_states)

    def step(self, op, x, past, cross, kernels, context, bias):
        self_kernel, cross_kernel = kernels
        x, key, value, bias = self.layer[0](op, "cached", x, past, self_kernel, context, bias)
        x = self.layer[1](op, "cross", x, *cross, cross_kernel)
        return self.layer[2](op, x), key, value, bias


class T5Stack(Steps):
    """The blocks and the final_layer_norm. Every norm but the first block's first reads a
    residual sum, so all but that one fuse with it, and the final norm makes up the count."""

    decoder = False

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__()
        per_layer, attention = t5_settings(cfg).bias_per_layer, self.self_attention_cls(cfg)
        self.block = nn.ModuleList(
            [
                T5Block(
                    cfg, dtype, self.decoder, per_layer or i == 0, attention, self.ff(cfg, dtype, i)
                )
                for i in range(layers)
            ]
        )
        self.final_layer_norm = RMSNorm(cfg.d_model, cfg.norm_eps, dtype)
        self.norms = layers * (3 if self.decoder else 2)
        self.dtype = dtype
        self.embed_tokens = None  # the body gives it the checkpoint's own table, if any

    def embed(self, op, input_ids, shared_rows):
        """The tokens' rows: from this stack's own table where the checkpoint has one
        (transformers ties it to `shared` only when they are equal), else `shared_rows`, the
        body's (read in its scope)."""
        return shared_rows if self.embed_tokens is None else self.embed_tokens(op, input_ids)

    def self_attention_cls(self, cfg: Seq2SeqConfig) -> type:
        return T5LayerSelfAttention

    def ff(self, cfg: Seq2SeqConfig, dtype: ir.DataType, index: int) -> nn.Module:
        """Block `index`'s feed-forward sublayer."""
        return T5LayerFF(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": self.norms} if plan.has(SKIP_NORM) else {}


class T5EncoderStack(T5Stack):
    def context(self, op, x, attention_mask):
        """What the relative bias is computed from: here the query and key positions."""
        positions = op.Range(0, op.Squeeze(op.Shape(x, start=1, end=2), [0]), 1)
        return positions, positions

    def encode(self, op, input_ids, shared_rows, kernel, attention_mask):
        x = self.embed(op, input_ids, shared_rows)
        context, bias = self.context(op, x, attention_mask), None
        for block in self.block:
            x, bias = block(op, "encoder", x, kernel, context, bias)
        return self.final_layer_norm(op, x)


class T5DecoderStack(T5Stack):
    """The new tokens sit at past .. past + new; keys at 0 .. past + new."""

    decoder = True

    def cross_kv(self, op, encoder_hidden_states):
        return [block(op, "key_value", encoder_hidden_states) for block in self.block]

    def decode(self, op, input_ids, shared_rows, self_past, cross, kernels):
        x = self.embed(op, input_ids, shared_rows)
        past = op.Squeeze(op.Shape(self_past[0][0], start=2, end=3), [0])
        total = op.Add(past, op.Squeeze(op.Shape(x, start=1, end=2), [0]))
        context = (op.Range(past, total, 1), op.Range(0, total, 1))
        bias, presents = None, []
        for block, past_kv, layer_cross in zip(self.block, self_past, cross, strict=True):
            x, key, value, bias = block(op, "step", x, past_kv, layer_cross, kernels, context, bias)
            presents.append((key, value))
        return self.final_layer_norm(op, x), presents


class SharedTable(Steps):
    """`shared`: the token table, read as rows or as the LM head tied to it (each read in this
    scope, so its parameter is `shared.weight` whichever reads it)."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([cfg.vocab_size, cfg.d_model], dtype)
        self.cfg = cfg

    def rows(self, op, input_ids):
        return op.Gather(self.weight, input_ids, axis=0)

    def logits(self, op, hidden):
        return tied_logits(op, self.cfg, self.weight, hidden)


class T5Body(Steps):
    """`shared` and the stacks of one part, their parameters at the checkpoint's root. A stack
    whose own `embed_tokens` table the checkpoint holds reads that one; `shared` is made only
    where a stack or the tied head reads it."""

    def __init__(self, owner: Seq2SeqModel, cfg: Seq2SeqConfig, dtype: ir.DataType, part: str):
        super().__init__(name="")
        encoding, decoding = part in ("encoder", "both"), part in ("decoder", "both")
        self.encoder = owner.encoder_cls(cfg, dtype, cfg.encoder_layers) if encoding else None
        self.decoder = owner.decoder_cls(cfg, dtype, cfg.decoder_layers) if decoding else None
        shared_read = decoding and cfg.tie_word_embeddings
        for name, stack in (("encoder", self.encoder), ("decoder", self.decoder)):
            if stack is not None and f"{name}.embed_tokens.weight" in owner.tensors:
                stack.embed_tokens = Embedding(cfg.vocab_size, cfg.d_model, dtype)
            shared_read = shared_read or (stack is not None and stack.embed_tokens is None)
        self.shared = SharedTable(cfg, dtype) if shared_read else None

    def _rows(self, op, stack, input_ids):
        return self.shared(op, "rows", input_ids) if stack.embed_tokens is None else None

    def encode(self, op, input_ids, kernel, attention_mask):
        rows = self._rows(op, self.encoder, input_ids)
        return self.encoder(op, "encode", input_ids, rows, kernel, attention_mask)

    def cross_kv(self, op, encoder_hidden_states):
        return self.decoder(op, "cross_kv", encoder_hidden_states)

    def tied_logits(self, op, hidden):
        return self.shared(op, "logits", hidden)

    def decode(self, op, input_ids, self_past, cross, kernels):
        rows = self._rows(op, self.decoder, input_ids)
        return self.decoder(op, "decode", input_ids, rows, self_past, cross, kernels)


class T5Model(Seq2SeqModel):
    """T5ForConditionalGeneration: the head is `lm_head` when the checkpoint has it, else the
    shared table."""

    # T5EncoderModel checkpoints hold no decoder: refused by name as an encoder task
    head_tasks = {  # noqa: RUF012
        "ForConditionalGeneration": "text2text-generation",
        "EncoderModel": "feature-extraction",
    }
    body_name = "transformer"  # transformers' base_model_prefix; T5Body adds no scope
    body_cls = T5Body
    encoder_cls = T5EncoderStack
    decoder_cls = T5DecoderStack

    def __init__(self, cfg, dtype, ep, task, tensors, part="both"):
        tied = HEAD not in tensors
        cfg = dataclasses.replace(cfg, tie_word_embeddings=tied)
        super().__init__(cfg, dtype, ep, task, tensors, part)

    def encoder_kernel(self, op, attention_mask):
        return encoder_attention(op, self.ep, attention_mask, self.dtype)

    def _encode(self, op, input_ids, attention_mask):
        kernel = self.encoder_kernel(op, attention_mask)
        return self.body(op, "encode", input_ids, kernel, attention_mask)

    def logits(self, op, hidden):
        if t5_settings(self.cfg).scale_logits:
            hidden = op.Mul(hidden, self.cfg.d_model**-0.5)
        head = getattr(self, self.head_name)
        return self.body(op, "tied_logits", hidden) if head is None else head(op, hidden)


# the shared table where both stacks and the head have their own, and the cross-attention
# table older checkpoints saved (transformers ignores it: cross-attention has no position bias)
T5_UNUSED = (
    r"shared\.weight",
    r"decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight",
)


def _family(model_type: str, notes: str, examples: tuple[str, ...], rules: T5Rules) -> Family:
    return Family(
        model_type,
        T5Model,
        notes,
        examples,
        rules=rules,
        task="text2text-generation",
        category="seq2seq",
        unused=T5_UNUSED,
    )


FAMILIES = [
    _family(
        "t5",
        "encoder-decoder, RMS pre-norm, relative position buckets, unscaled attention, "
        "ReLU or gated-GELU feed-forward",
        ("google-t5/t5-small", "google/flan-t5-base"),
        T5Rules(),
    ),
    _family(
        "mt5",
        "T5 v1.1's layout (gated-GELU, untied head) without the LM head's input scale",
        ("google/mt5-small",),
        T5Rules(scaled="never"),
    ),
    _family(
        "umt5",
        "T5 v1.1's layout with a relative position table in every self-attention layer",
        ("google/umt5-small",),
        T5Rules(bias_per_layer=True),
    ),
]

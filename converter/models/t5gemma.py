"""T5Gemma: Gemma 2's layers as an encoder and a decoder with cross-attention, on the
encoder-decoder contract of converter/models/seq2seq.py.

- config.json nests `encoder` and `decoder` (t5_gemma_module sections, each with its own
  layers, heads, window, softcaps and rope); the top level gives vocab_size and
  tie_word_embeddings. The decoder starts from its bos_token_id. Sides of different widths or
  head sizes (T5Gemma 9B-2B) are refused by name: the cross-attention cache and the task's
  encoder_hidden_states are laid out by one width.
- Each stack: embed_tokens times sqrt(hidden_size), Gemma RMS norms (1 + weight) before and
  after every sublayer, rotary positions on self-attention (the encoder's 0 .., the decoder's
  past ..), grouped key/value heads, scores scaled by query_pre_attn_scalar ** -0.5 and
  soft-capped (attn_logit_softcapping; cross-attention too), sliding windows on the
  "sliding_attention" layers (the encoder's |query - key| <= window, the decoder's
  query - key < window), a gated MLP and a final `norm`.
- lm_head.out_proj (or the decoder's table where tied), then final_logit_softcapping.
- Attention is opset-23 Attention on every EP (softcap, grouped heads and boolean masks):
  com.microsoft MultiHeadAttention has neither softcap nor grouped key/value heads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, RMSNorm
from converter.components.attention import Rotary
from converter.components.embedding import Embedding
from converter.components.mlp import GatedMLP
from converter.components.seq2seq_attention import Steps, heads_first, heads_last
from converter.config import FULL, SLIDING
from converter.config.reader import MAX_DIM, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, ConfigReader
from converter.config.rope import Rope, parse_rope
from converter.config.seq2seq import Seq2SeqConfig
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.decoder import tied_logits
from converter.models.seq2seq import Seq2SeqModel
from converter.registry import Family

MODULE_TYPE = "t5_gemma_module"
TIED_HEAD = "lm_head.out_proj.weight"


@dataclass(frozen=True)
class SideSettings:
    """One stack's own settings (`cfg.extra["encoder"]` / `["decoder"]`)."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    activation: str
    eps: float
    scale: float  # query_pre_attn_scalar ** -0.5
    softcap: float  # attn_logit_softcapping (0: none)
    final_softcap: float  # final_logit_softcapping (0: none)
    window: int | None
    sliding: tuple[bool, ...]  # per layer: a "sliding_attention" layer
    rope: Rope
    attention_bias: bool


def side(cfg: Seq2SeqConfig, which: str) -> SideSettings:
    return cfg.extra[which]


class T5GemmaRules:
    nested_types = (MODULE_TYPE,)  # scripts/gen_config_defaults.py: the sections' defaults

    def select(self, raw: dict) -> dict:
        return raw

    def side(self, r: ConfigReader, key: str) -> tuple[SideSettings, ConfigReader]:
        section = r.raw.get(key)
        if not isinstance(section, dict):
            raise ConfigError(f"'{key}' must be the {key}'s config (a JSON object)")
        s = ConfigReader(dict(section), MODULE_TYPE)
        layers = s.int("num_hidden_layers", hi=MAX_LAYERS)
        heads, kv_heads = s.int("num_attention_heads"), s.int("num_key_value_heads")
        if heads % kv_heads:
            raise ConfigError(
                f"'{key}.num_attention_heads' = {heads} is not a multiple of "
                f"'num_key_value_heads' = {kv_heads}"
            )
        head_dim = s.int("head_dim")
        types = s.raw.get("layer_types")
        if types is None:  # transformers' default: sliding, full, sliding, ...
            types = [SLIDING if (i + 1) % 2 else FULL for i in range(layers)]
        if not isinstance(types, list) or len(types) != layers or set(types) - {FULL, SLIDING}:
            raise ConfigError(f"'{key}.layer_types' must give {FULL} or {SLIDING} per layer")
        sliding = tuple(t == SLIDING for t in types)
        window = s.raw.get("sliding_window")
        if window is not None:
            window = s.int("sliding_window", hi=MAX_POSITIONS)
        elif any(sliding):  # transformers cannot build those layers' masks either
            raise ConfigError(
                f"'{key}.sliding_window' is null but 'layer_types' has sliding layers"
            )
        settings = SideSettings(
            layers=layers,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            ffn=s.int("intermediate_size", hi=MAX_DIM * 4),
            activation=s.str("hidden_activation"),
            eps=s.float("rms_norm_eps"),
            scale=s.float("query_pre_attn_scalar") ** -0.5,
            softcap=s.optional_float("attn_logit_softcapping") or 0.0,
            final_softcap=s.optional_float("final_logit_softcapping") or 0.0,
            window=window,
            sliding=sliding,
            rope=parse_rope(s.raw, head_dim=head_dim),
            attention_bias=s.bool("attention_bias", False),
        )
        return settings, s

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        if not r.bool("is_encoder_decoder", True):
            r.refuse("is_encoder_decoder", "the encoder alone is T5GemmaEncoderModel (not yet)")
        encoder, enc = self.side(r, "encoder")
        decoder, dec = self.side(r, "decoder")
        width = dec.int("hidden_size")
        if enc.int("hidden_size") != width or encoder.head_dim != decoder.head_dim:
            raise ConfigError(
                "'encoder.hidden_size' / 'head_dim' differ from the decoder's: unbalanced "
                "T5Gemma (its cross-attention reads the wider encoder) is not built"
            )
        vocab = r.int("vocab_size", hi=MAX_VOCAB)
        for key in ("vocab_size",):
            if enc.int(key) != vocab or dec.int(key) != vocab:
                raise ConfigError(f"'encoder.{key}' and 'decoder.{key}' must be {vocab}")
        start = dec.int("bos_token_id", lo=0, hi=vocab - 1)
        pad, eos = dec.raw.get("pad_token_id"), dec.token_ids("eos_token_id", vocab)
        return Seq2SeqConfig(
            model_type=r.model_type,
            vocab_size=vocab,
            d_model=width,
            encoder_layers=encoder.layers,
            decoder_layers=decoder.layers,
            encoder_heads=encoder.heads,
            decoder_heads=decoder.heads,
            encoder_kv_heads=encoder.kv_heads,
            decoder_kv_heads=decoder.kv_heads,
            head_dim=decoder.head_dim,
            encoder_ffn_dim=encoder.ffn,
            decoder_ffn_dim=decoder.ffn,
            activation=decoder.activation,
            norm_type="rms",
            norm_eps=decoder.eps,
            pre_norm=True,
            embedding_norm=False,
            scale_embedding=True,
            position_kind="none",  # rotary, inside the attention
            max_positions=0,
            position_offset=0,
            pad_token_id=pad,
            eos_token_id=eos[0] if eos else None,
            decoder_start_token_id=start,
            tie_word_embeddings=r.bool("tie_word_embeddings", True),
            extra={"encoder": encoder, "decoder": decoder},
        )


def gemma_norm(cfg: Seq2SeqConfig, s: SideSettings, dtype: ir.DataType) -> RMSNorm:
    return RMSNorm(cfg.d_model, s.eps, dtype, offset=1.0)


@dataclass(frozen=True)
class MlpView:
    """What GatedMLP reads of a config."""

    hidden_size: int
    intermediate_size: int
    activation: str
    mlp_bias: bool = False
    fused_gate_up: bool = False


class T5GemmaAttention(Steps):
    """q/k/v/o projections; `encoder` and `cached` self-attention (rotary, the layer's mask),
    `key_value` of the encoder output and `cross`-attention over it."""

    def __init__(self, cfg: Seq2SeqConfig, s: SideSettings, dtype: ir.DataType):
        super().__init__()
        inner, kv_inner, bias = s.heads * s.head_dim, s.kv_heads * s.head_dim, s.attention_bias
        self.q_proj = Linear(cfg.d_model, inner, bias, dtype)
        self.k_proj = Linear(cfg.d_model, kv_inner, bias, dtype)
        self.v_proj = Linear(cfg.d_model, kv_inner, bias, dtype)
        self.o_proj = Linear(inner, cfg.d_model, bias, dtype)
        self.s = s
        self.softcap = {"softcap": s.softcap} if s.softcap else {}

    def _attend(self, op, q, k, v, mask, *past, outputs: int = 1):
        s = self.s
        return op.Attention(
            q,
            k,
            v,
            mask,
            *past,
            q_num_heads=s.heads,
            kv_num_heads=s.kv_heads,
            scale=s.scale,
            **self.softcap,
            _outputs=outputs,
        )

    def _rotated(self, op, x, rotary):
        q, k = self.q_proj(op, x), self.k_proj(op, x)
        s = self.s
        q, k = rotary(op, q, s.heads, s.rope), rotary(op, k, s.kv_heads, s.rope)
        return q, k, self.v_proj(op, x)

    def encoder(self, op, x, rotary, mask):
        q, k, v = self._rotated(op, x, rotary)
        return self.o_proj(op, self._attend(op, q, k, v, mask))

    def cached(self, op, x, past_key, past_value, rotary, mask):
        q, k, v = self._rotated(op, x, rotary)
        y, key, value = self._attend(op, q, k, v, mask, past_key, past_value, outputs=3)
        return self.o_proj(op, y), key, value

    def key_value(self, op, source):
        s = self.s
        return (
            heads_first(op, self.k_proj(op, source), s.kv_heads, s.head_dim),
            heads_first(op, self.v_proj(op, source), s.kv_heads, s.head_dim),
        )

    def cross(self, op, x, key, value, mask):
        q = heads_first(op, self.q_proj(op, x), self.s.heads, self.s.head_dim)
        return self.o_proj(op, heads_last(op, self._attend(op, q, key, value, mask)))


def around(op, x, pre, post, run):
    """x + post(run(pre(x))): Gemma 2's sandwich of norms."""
    return op.Add(x, post(op, run(pre(op, x))))


class T5GemmaLayer(Steps):
    """An encoder layer (self-attention, MLP) or, `decoder`, a decoder layer (self-attention,
    cross-attention, MLP), each sublayer between its pre and post norms."""

    def __init__(self, cfg: Seq2SeqConfig, s: SideSettings, dtype: ir.DataType, decoder: bool):
        super().__init__()
        self.self_attn = T5GemmaAttention(cfg, s, dtype)
        self.pre_self_attn_layernorm = gemma_norm(cfg, s, dtype)
        self.post_self_attn_layernorm = gemma_norm(cfg, s, dtype)
        self.mlp = GatedMLP(MlpView(cfg.d_model, s.ffn, s.activation), dtype)
        self.pre_feedforward_layernorm = gemma_norm(cfg, s, dtype)
        self.post_feedforward_layernorm = gemma_norm(cfg, s, dtype)
        if decoder:
            self.cross_attn = T5GemmaAttention(cfg, s, dtype)
            self.pre_cross_attn_layernorm = gemma_norm(cfg, s, dtype)
            self.post_cross_attn_layernorm = gemma_norm(cfg, s, dtype)

    def _mlp(self, op, x):
        pre, post = self.pre_feedforward_layernorm, self.post_feedforward_layernorm
        return around(op, x, pre, post, lambda h: self.mlp(op, h))

    def encoder(self, op, x, rotary, mask):
        pre, post = self.pre_self_attn_layernorm, self.post_self_attn_layernorm
        x = around(op, x, pre, post, lambda h: self.self_attn(op, "encoder", h, rotary, mask))
        return self._mlp(op, x)

    def key_value(self, op, encoder_hidden_states):
        return self.cross_attn(op, "key_value", encoder_hidden_states)

    def step(self, op, x, past, cross, rotary, mask, cross_mask):
        presents = []

        def attend(h):
            y, key, value = self.self_attn(op, "cached", h, *past, rotary, mask)
            presents.extend((key, value))
            return y

        x = around(op, x, self.pre_self_attn_layernorm, self.post_self_attn_layernorm, attend)
        pre, post = self.pre_cross_attn_layernorm, self.post_cross_attn_layernorm
        x = around(op, x, pre, post, lambda h: self.cross_attn(op, "cross", h, *cross, cross_mask))
        return self._mlp(op, x), *presents


class T5GemmaStack(Steps):
    """embed_tokens (times sqrt(hidden_size)), the layers and the final `norm`. Every pre-norm
    but the first layer's first reads a residual sum, and so does the final norm."""

    decoder = False

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        which = "decoder" if self.decoder else "encoder"
        s = side(cfg, which)
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.d_model, dtype, cfg.d_model**0.5)
        self.layers = nn.ModuleList(
            [T5GemmaLayer(cfg, s, dtype, self.decoder) for _ in range(s.layers)]
        )
        self.norm = gemma_norm(cfg, s, dtype)
        self.s, self.dtype = s, dtype
        self.fused_norms = s.layers * (3 if self.decoder else 2)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": self.fused_norms} if plan.has(SKIP_NORM) else {}

    def rotary(self, op, input_ids, first):
        """Rotary tables for positions first, first + 1, ... of every row."""
        length = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
        positions = op.Unsqueeze(op.Range(first, op.Add(first, length), 1), [0])
        return Rotary(self.dtype, op.Expand(positions, op.Shape(input_ids)))

    def masks(self, op, keep, within):
        """Per layer: `keep` [batch or 1, 1, queries, keys], and-ed on the sliding layers with
        `within(window)`, whether each key is in the query's window."""
        sliding = op.And(keep, within(self.s.window)) if any(self.s.sliding) else None
        return [sliding if s else keep for s in self.s.sliding]


class T5GemmaEncoder(T5GemmaStack):
    def encode(self, op, input_ids, attention_mask):
        length = op.Shape(input_ids, start=1, end=2)
        padding = op.Unsqueeze(op.Cast(attention_mask, to=ir.DataType.BOOL), [1, 2])
        keep = op.Expand(padding, op.Concat([1, 1], length, [1], axis=0))
        positions = op.Range(0, op.Squeeze(length, [0]), 1)
        distance = op.Abs(op.Sub(op.Unsqueeze(positions, [1]), op.Unsqueeze(positions, [0])))
        rotary = self.rotary(op, input_ids, 0)
        x = self.embed_tokens(op, input_ids)
        masks = self.masks(op, keep, lambda window: op.LessOrEqual(distance, window))
        for layer, mask in zip(self.layers, masks, strict=True):
            x = layer(op, "encoder", x, rotary, mask)
        return self.norm(op, x)


class T5GemmaDecoder(T5GemmaStack):
    decoder = True

    def cross_kv(self, op, encoder_hidden_states):
        return [layer(op, "key_value", encoder_hidden_states) for layer in self.layers]

    def decode(self, op, input_ids, self_past, cross, encoder_attention_mask):
        past = op.Squeeze(op.Shape(self_past[0][0], start=2, end=3), [0])
        new = op.Squeeze(op.Shape(input_ids, start=1, end=2), [0])
        queries = op.Unsqueeze(op.Add(op.Range(0, new, 1), past), [1])
        keys = op.Unsqueeze(op.Range(0, op.Add(past, new), 1), [0])
        keep = op.Unsqueeze(op.LessOrEqual(keys, queries), [0, 1])
        padding = op.Unsqueeze(op.Cast(encoder_attention_mask, to=ir.DataType.BOOL), [1, 2])
        cross_mask = op.Expand(padding, op.Concat([1, 1], op.Unsqueeze(new, [0]), [1], axis=0))
        rotary = self.rotary(op, input_ids, past)
        x = self.embed_tokens(op, input_ids)
        presents = []
        masks = self.masks(op, keep, lambda window: op.Less(op.Sub(queries, keys), window))
        for layer, past_kv, kv, mask in zip(self.layers, self_past, cross, masks, strict=True):
            x, key, value = layer(op, "step", x, past_kv, kv, rotary, mask, cross_mask)
            presents.append((key, value))
        return self.norm(op, x), presents


class T5GemmaBody(Steps):
    """`model`: the stacks of one part."""

    def __init__(self, owner: Seq2SeqModel, cfg: Seq2SeqConfig, dtype: ir.DataType, part: str):
        super().__init__()
        self.shared = None
        enc, dec = part in ("encoder", "both"), part in ("decoder", "both")
        self.encoder = T5GemmaEncoder(cfg, dtype) if enc else None
        self.decoder = T5GemmaDecoder(cfg, dtype) if dec else None

    def encode(self, op, input_ids, attention_mask):
        return self.encoder(op, "encode", input_ids, attention_mask)

    def cross_kv(self, op, encoder_hidden_states):
        return self.decoder(op, "cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, self_past, cross, encoder_attention_mask):
        return self.decoder(op, "decode", input_ids, self_past, cross, encoder_attention_mask)


class T5GemmaLMHead(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.out_proj = Linear(cfg.d_model, cfg.vocab_size, False, dtype, head=True)

    def forward(self, op, x):
        return self.out_proj(op, x)


class T5GemmaModel(Seq2SeqModel):
    """T5GemmaForConditionalGeneration: `model` and `lm_head.out_proj` (where untied)."""

    body_cls = T5GemmaBody

    def __init__(self, cfg, dtype, ep, task, tensors, part="both"):
        cfg = dataclasses.replace(cfg, tie_word_embeddings=TIED_HEAD not in tensors)
        super().__init__(cfg, dtype, ep, task, tensors, part)

    def make_head(self, cfg: Seq2SeqConfig, dtype: ir.DataType) -> T5GemmaLMHead | None:
        return None if cfg.tie_word_embeddings else T5GemmaLMHead(cfg, dtype)

    def fallbacks(self) -> list[str]:
        if not self.ep.has(ENCODER_MHA):
            return []
        return [
            "attention in opset-23 Attention instead of MultiHeadAttention: it has no softcap "
            "and no grouped key/value heads"
        ]

    def _encode(self, op, input_ids, attention_mask):
        return self.body(op, "encode", input_ids, attention_mask)

    def _decode(self, op, input_ids, encoder_attention_mask, self_past, cross):
        body = self.body
        hidden, presents = body(op, "decode", input_ids, self_past, cross, encoder_attention_mask)
        return self.logits(op, hidden), presents

    def logits(self, op, hidden):
        if self.lm_head is None:
            logits = tied_logits(op, self.cfg, self.body.decoder.embed_tokens.weight, hidden)
        else:
            logits = self.lm_head(op, hidden)
        cap = side(self.cfg, "decoder").final_softcap
        return op.Mul(op.Tanh(op.Div(logits, cap)), cap) if cap else logits


FAMILIES = [
    Family(
        "t5gemma",
        T5GemmaModel,
        "Gemma 2 layers as encoder and decoder with cross-attention: rotary positions, grouped "
        "key/value heads, soft-capped scores and logits, sliding windows per layer type",
        ("google/t5gemma-2b-2b-ul2",),
        rules=T5GemmaRules(),
        task="text2text-generation",
        category="seq2seq",
        prefix="",
    )
]

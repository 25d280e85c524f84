"""The generic encoder-decoder (BART's layout), and the contract every seq2seq model keeps.

Contract (what converter/tasks/seq2seq.py, converter/validate and the parity harness call):

  model = ModelClass(cfg, dtype, ep, task, tensors)    # as the registry builds every non-LM:
      # cfg a Seq2SeqConfig (converter/config/seq2seq.py) or a family's own config; task one
      # of `heads`; tensors the checkpoint's names (optional parts: final_logits_bias, ...)
  model.part("encoder") / model.part("decoder")        # a fresh module per graph: a parameter
      # belongs to one graph, and both bind by the same checkpoint names
  encoder part:
    encoder_inputs(dtype) -> {name: (onnx type, dims)}  # the encoder graph's inputs, in
      # encode's order; text: input_ids, attention_mask int64 [batch_size,
      # encoder_sequence_length]. Speech models name theirs (input_features, ...); without an
      # attention_mask the decoder graph gets no encoder_attention_mask either.
    encode(op, *those inputs) -> last_hidden_state [batch, enc_seq, d_model]
  decoder part:
    cross_kv(op, encoder_hidden_states) -> [(key, value)] per decoder layer, each
      [batch, heads, enc_seq, head_dim] (the task calls it on an empty slice on cached steps)
    decode(op, input_ids, encoder_attention_mask, self_past, cross) -> (logits, self_presents)
      input_ids [batch, seq]; encoder_attention_mask [batch, enc_seq] int64 or None;
      self_past [(key, value)] [batch, heads, past, head_dim] per layer (positions start at
      past); cross as cross_kv gives it; logits [batch, seq, vocab];
      self_presents [(key, value)] [batch, heads, past + seq, head_dim]
    self_caches() / cross_caches() -> [LayerCache] (kinds KV and CROSS, shapes after the batch
      with "sequence" / "encoder_sequence" where they grow), one per decoder layer
  class attributes: `heads` (the task names it converts for), `modality` ("text" | "audio"),
  `coverage_scope = "seq2seq"` (converter/registry.py counts it there), `head_tasks` /
  `headless_task` (converter/tasks/choice.py: ...ForConditionalGeneration, ...Model).
  Fused-kernel counts: each module declares `expected_fusions(plan)` (here: MultiHeadAttention
  1 per encoder layer, 2 per decoder layer on EPs with it; skip norms per stack).
  A family registers Family(model_type, ModelClass, notes, examples, rules=Seq2SeqRules(...)
  or its subclass, task= its generation task (translation, summarization, else
  text2text-generation: the default a generation head converts for), category="seq2seq",
  unused=..., prefix=...),
  removes its type from converter/not_yet_seq2seq.py and adds parity cases:
  tests/parity/seq2seq_cases/<family>.py, CASES = {"type" or "type:variant":
  Seq2SeqCase(config={"model_type": ..., tiny sizes}, model_class="AutoModelForSeq2SeqLM",
  inputs="text")}; speech families add their modality to INPUTS in
  tests/parity/seq2seq_reference.py.

BART's layout: token embeddings (the `shared` table, times sqrt(d_model) with scale_embedding)
plus learned positions (read at position + 2), layernorm_embedding, then post-norm layers
(pre-norm with a final `layer_norm` per stack where the config says: mBART, Pegasus, ...),
a tied or own lm_head and final_logits_bias. Module paths are the checkpoint's names
(`model.decoder.layers.0.encoder_attn.k_proj.weight`): parameters take their names from the
scopes of the calls, so every module runs through its `__call__` (modules with several entry
points are `Steps`: `module(op, "method", ...)`). A family that differs overrides the parts:
`make_positions` of the stacks (sinusoidal tables), the norm kind (`cfg.norm_type`), the layer
classes (`layer_cls` of each stack, `attention_cls` of each layer, `Seq2SeqAttention.names`),
`body_name` / `head_name` / `bias_name`, or whole stacks (`encoder_cls`, `decoder_cls`).
"""

from __future__ import annotations

from typing import ClassVar

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, RMSNorm, activation
from converter.components.cache import CROSS, LayerCache, kv_cache
from converter.components.embedding import Embedding
from converter.components.encoder_attention import encoder_attention
from converter.components.positions import LearnedPositions
from converter.components.seq2seq_attention import Seq2SeqAttention, Steps, decoder_kernels
from converter.config.seq2seq import Seq2SeqConfig
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM, ExecutionProvider
from converter.models.decoder import tied_logits
from converter.tasks.seq2seq import BATCH, ENCODER_SEQUENCE, SEQ2SEQ_TASKS

PARTS = ("encoder", "decoder", "both")


def seq2seq_norm(cfg: Seq2SeqConfig, dtype: ir.DataType):
    if cfg.norm_type == "rms":
        return RMSNorm(cfg.d_model, cfg.norm_eps, dtype)
    return LayerNorm(cfg.d_model, cfg.norm_eps, dtype)


def sublayer(op, x, norm, run, pre_norm: bool):
    """One residual block: x + run(norm(x)) (pre-norm) or norm(x + run(x)) (post-norm)."""
    if pre_norm:
        return op.Add(x, run(norm(op, x)))
    return norm(op, op.Add(x, run(x)))


def feed_forward(op, layer, x):
    """fc1, the activation, fc2 (BART's names, attributes of the layer)."""
    return layer.fc2(op, activation(op, layer.act, layer.fc1(op, x)))


class Seq2SeqEncoderLayer(nn.Module):
    attention_cls = Seq2SeqAttention
    sublayers = 2

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.self_attn = self.attention_cls(cfg.d_model, cfg.encoder_heads, cfg.head_dim, dtype)
        self.self_attn_layer_norm = seq2seq_norm(cfg, dtype)
        self.fc1 = Linear(cfg.d_model, cfg.encoder_ffn_dim, True, dtype)
        self.fc2 = Linear(cfg.encoder_ffn_dim, cfg.d_model, True, dtype)
        self.final_layer_norm = seq2seq_norm(cfg, dtype)
        self.pre_norm, self.act = cfg.pre_norm, cfg.activation

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: int(plan.has(ENCODER_MHA))}

    def forward(self, op, x, kernel, bias=None):
        def attend(h):
            return self.self_attn(op, "encoder", h, kernel, bias)

        x = sublayer(op, x, self.self_attn_layer_norm, attend, self.pre_norm)
        return sublayer(
            op, x, self.final_layer_norm, lambda h: feed_forward(op, self, h), self.pre_norm
        )


class Seq2SeqDecoderLayer(Steps):
    """Steps: `step` (one decoding step) and `key_value` (its cross-attention cache)."""

    attention_cls = Seq2SeqAttention
    sublayers = 3

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        heads, head_dim = cfg.decoder_heads, cfg.head_dim
        self.self_attn = self.attention_cls(cfg.d_model, heads, head_dim, dtype)
        self.self_attn_layer_norm = seq2seq_norm(cfg, dtype)
        self.encoder_attn = self.attention_cls(cfg.d_model, heads, head_dim, dtype)
        self.encoder_attn_layer_norm = seq2seq_norm(cfg, dtype)
        self.fc1 = Linear(cfg.d_model, cfg.decoder_ffn_dim, True, dtype)
        self.fc2 = Linear(cfg.decoder_ffn_dim, cfg.d_model, True, dtype)
        self.final_layer_norm = seq2seq_norm(cfg, dtype)
        self.pre_norm, self.act = cfg.pre_norm, cfg.activation

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 2 * int(plan.has(ENCODER_MHA))}

    def key_value(self, op, encoder_hidden_states):
        return self.encoder_attn(op, "key_value", encoder_hidden_states)

    def step(self, op, x, past, cross, kernels, bias=None):
        """(output, present key, present value) of one step over `past` (key, value) and the
        encoder's `cross` (key, value)."""
        self_kernel, cross_kernel = kernels
        presents = []

        def attend(h):
            y, key, value = self.self_attn(op, "cached", h, *past, self_kernel, bias)
            presents.extend((key, value))
            return y

        def attend_encoder(h):
            return self.encoder_attn(op, "cross", h, *cross, cross_kernel)

        x = sublayer(op, x, self.self_attn_layer_norm, attend, self.pre_norm)
        x = sublayer(op, x, self.encoder_attn_layer_norm, attend_encoder, self.pre_norm)
        ffn = lambda h: feed_forward(op, self, h)  # noqa: E731
        x = sublayer(op, x, self.final_layer_norm, ffn, self.pre_norm)
        return x, *presents


class Seq2SeqStack(Steps):
    """What BART's encoder and decoder share: their own token table when the config unties
    them (else the body's `shared` embeds the tokens), positions, layernorm_embedding, the
    layers and, pre-norm, a final layer_norm."""

    layer_cls: type[nn.Module]

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, layers: int):
        super().__init__()
        scale = cfg.d_model**0.5 if cfg.scale_embedding else 1.0
        tied = cfg.tie_word_embeddings
        self.embed_tokens = None if tied else Embedding(cfg.vocab_size, cfg.d_model, dtype, scale)
        self.embed_positions = self.make_positions(cfg, dtype)
        self.layernorm_embedding = seq2seq_norm(cfg, dtype) if cfg.embedding_norm else None
        self.layers = nn.ModuleList([self.make_layer(cfg, dtype, i) for i in range(layers)])
        self.layer_norm = seq2seq_norm(cfg, dtype) if cfg.pre_norm else None
        self.cfg = cfg

    def make_layer(self, cfg: Seq2SeqConfig, dtype: ir.DataType, index: int) -> nn.Module:
        """Layer `index` of the stack (families whose layers differ by depth override it)."""
        return self.layer_cls(cfg, dtype)

    def make_positions(self, cfg: Seq2SeqConfig, dtype: ir.DataType) -> nn.Module | None:
        if cfg.position_kind == "learned":
            return LearnedPositions(cfg.max_positions, cfg.d_model, dtype, cfg.position_offset)
        if cfg.position_kind in ("relative", "none"):
            return None
        raise ConfigError(f"{cfg.model_type}: {cfg.position_kind} positions need its own module")

    def expected_fusions(self, plan) -> dict[str, int]:
        """Each norm that reads a residual sum fuses with it (Skip*LayerNormalization)."""
        if not plan.has(SKIP_NORM):
            return {}
        cfg, positioned = self.cfg, self.embed_positions is not None
        norms = len(self.layers) * self.layer_cls.sublayers
        if cfg.pre_norm:
            # the final norm reads the last residual sum; the first layer's first norm reads the
            # embeddings, a sum only when positions are added and no norm follows them
            norms += 1 - int(not positioned or self.layernorm_embedding is not None)
        if self.layernorm_embedding is not None and positioned:
            norms += 1
        return {"skip_norms": norms}

    def embed(self, op, input_ids, tokens, start=None):
        """`tokens` (the shared table's rows; None: this stack's own table's) plus the
        positions' rows, then layernorm_embedding."""
        x = self.embed_tokens(op, input_ids) if tokens is None else tokens
        if self.embed_positions is not None:
            x = op.Add(x, self.embed_positions(op, self.position_ids(op, input_ids, start)))
        return x if self.layernorm_embedding is None else self.layernorm_embedding(op, x)

    def position_ids(self, op, input_ids, start=None):
        """[1, sequence]: start, start + 1, ... (0 when `start` is None, the past length
        [1] otherwise); families that count positions otherwise (M2M-100's skip padding)
        override it."""
        length = op.Shape(input_ids, start=1, end=2)
        end = length if start is None else op.Add(start, length)
        first = 0 if start is None else op.Squeeze(start, [0])
        return op.Unsqueeze(op.Range(first, op.Squeeze(end, [0]), 1), [0])

    def finish(self, op, x):
        return x if self.layer_norm is None else self.layer_norm(op, x)


class Seq2SeqEncoder(Seq2SeqStack):
    layer_cls = Seq2SeqEncoderLayer

    def encode(self, op, input_ids, tokens, kernel):
        x = self.embed(op, input_ids, tokens)
        for layer in self.layers:
            x = layer(op, x, kernel)
        return self.finish(op, x)


class Seq2SeqDecoder(Seq2SeqStack):
    layer_cls = Seq2SeqDecoderLayer

    def cross_kv(self, op, encoder_hidden_states):
        return [layer(op, "key_value", encoder_hidden_states) for layer in self.layers]

    def decode(self, op, input_ids, tokens, self_past, cross, kernels):
        past_length = op.Shape(self_past[0][0], start=2, end=3)
        x = self.embed(op, input_ids, tokens, past_length)
        presents = []
        for layer, past, layer_cross in zip(self.layers, self_past, cross, strict=True):
            x, key, value = layer(op, "step", x, past, layer_cross, kernels)
            presents.append((key, value))
        return self.finish(op, x), presents


class Seq2SeqBody(Steps):
    """`model`: the shared token table (when tied) and the stacks of one part. The table is
    read here, in this scope, whichever stack embeds the tokens."""

    def __init__(self, owner: Seq2SeqModel, cfg: Seq2SeqConfig, dtype: ir.DataType, part: str):
        super().__init__()
        scale = cfg.d_model**0.5 if cfg.scale_embedding else 1.0
        tied = cfg.tie_word_embeddings
        self.shared = Embedding(cfg.vocab_size, cfg.d_model, dtype, scale) if tied else None
        enc = part in ("encoder", "both")
        dec = part in ("decoder", "both")
        self.encoder = owner.encoder_cls(cfg, dtype, cfg.encoder_layers) if enc else None
        self.decoder = owner.decoder_cls(cfg, dtype, cfg.decoder_layers) if dec else None

    def _tokens(self, op, input_ids):
        return None if self.shared is None else self.shared(op, input_ids)

    def encode(self, op, input_ids, kernel):
        return self.encoder(op, "encode", input_ids, self._tokens(op, input_ids), kernel)

    def cross_kv(self, op, encoder_hidden_states):
        return self.decoder(op, "cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, self_past, cross, kernels):
        tokens = self._tokens(op, input_ids)
        return self.decoder(op, "decode", input_ids, tokens, self_past, cross, kernels)


class Seq2SeqModel(Steps):
    """BART's ...ForConditionalGeneration: the body under `body_name`, the LM head under
    `head_name` (or the tied `shared` table) and `final_logits_bias` where the checkpoint has
    one (checkpoints of the headless ...Model leave it out: transformers then adds zeros).
    The contract's methods run their `_step` in this module's scope."""

    heads = SEQ2SEQ_TASKS
    head_tasks: ClassVar[dict[str, str]] = {"ForConditionalGeneration": "text2text-generation"}
    headless_task = "text2text-generation"  # BartModel checkpoints generate with a tied head
    modality = "text"
    coverage_scope = "seq2seq"  # converter/registry.py: counted among the encoder-decoders
    body_name = "model"
    head_name = "lm_head"
    bias_name = "final_logits_bias"
    body_cls = Seq2SeqBody
    encoder_cls = Seq2SeqEncoder
    decoder_cls = Seq2SeqDecoder

    def __init__(
        self,
        cfg: Seq2SeqConfig,
        dtype: ir.DataType,
        ep: ExecutionProvider,
        task: str,
        tensors: frozenset[str],
        part: str = "both",
    ):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} converts for {', '.join(self.heads)}, not {task}")
        if part not in PARTS:
            raise ValueError(f"part must be one of {', '.join(PARTS)}")
        self.cfg, self.dtype, self.ep, self.task, self.tensors = cfg, dtype, ep, task, tensors
        setattr(self, self.body_name, self.body_cls(self, cfg, dtype, part))
        decoding = part in ("decoder", "both")
        setattr(self, self.head_name, self.make_head(cfg, dtype) if decoding else None)
        with_bias = decoding and self.bias_name in tensors
        bias = nn.Parameter([1, cfg.vocab_size], dtype) if with_bias else None
        setattr(self, self.bias_name, bias)

    def make_head(self, cfg: Seq2SeqConfig, dtype: ir.DataType) -> Linear | None:
        """The LM head under `head_name` (None: `logits` reads a token table, the shared one)."""
        if cfg.tie_word_embeddings:
            return None
        return Linear(cfg.d_model, cfg.vocab_size, False, dtype, head=True)

    def part(self, which: str) -> Seq2SeqModel:
        """A fresh module for one graph: "encoder" or "decoder"."""
        return type(self)(self.cfg, self.dtype, self.ep, self.task, self.tensors, part=which)

    @property
    def body(self) -> Seq2SeqBody:
        return getattr(self, self.body_name)

    def expected_fusions(self, plan) -> dict[str, int]:
        """int4 builds (unless the head stays float) multiply a tied head by a quantized copy."""
        int4 = plan.int4
        tied_head = self.body.decoder is not None and self.cfg.tie_word_embeddings
        return {"int4_matmuls": 1} if tied_head and int4 is not None and int4.head_bits else {}

    # -- the contract --------------------------------------------------------------------

    def encode(self, op, input_ids, attention_mask):
        return self(op, "_encode", input_ids, attention_mask)

    def cross_kv(self, op, encoder_hidden_states) -> list[tuple]:
        return self(op, "_cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, encoder_attention_mask, self_past, cross):
        return self(op, "_decode", input_ids, encoder_attention_mask, self_past, cross)

    def encoder_inputs(self, dtype: ir.DataType) -> dict[str, tuple[ir.DataType, list]]:
        """The encoder graph's inputs in `encode`'s order: {name: (type, symbolic dims)}."""
        tokens = (ir.DataType.INT64, [BATCH, ENCODER_SEQUENCE])
        return {"input_ids": tokens, "attention_mask": tokens}

    def self_caches(self) -> list[LayerCache]:
        cfg = self.cfg
        return [kv_cache(cfg.decoder_kv_heads, cfg.head_dim) for _ in range(cfg.decoder_layers)]

    def cross_caches(self) -> list[LayerCache]:
        cfg = self.cfg
        shape = (cfg.decoder_kv_heads, "encoder_sequence", cfg.head_dim)
        return [LayerCache(CROSS, shape, shape) for _ in range(cfg.decoder_layers)]

    # -- the steps, in this module's scope -------------------------------------------------

    def _encode(self, op, input_ids, attention_mask):
        kernel = encoder_attention(op, self.ep, attention_mask, self.dtype)
        return self.body(op, "encode", input_ids, kernel)

    def _cross_kv(self, op, encoder_hidden_states):
        return self.body(op, "cross_kv", encoder_hidden_states)

    def _decode(self, op, input_ids, encoder_attention_mask, self_past, cross):
        kernels = decoder_kernels(op, self.ep, encoder_attention_mask, self.dtype)
        hidden, presents = self.body(op, "decode", input_ids, self_past, cross, kernels)
        return self.logits(op, hidden), presents

    def logits(self, op, hidden):
        head = getattr(self, self.head_name)
        if head is None:
            logits = tied_logits(op, self.cfg, self.body.shared.weight, hidden)
        else:
            logits = head(op, hidden)
        bias = getattr(self, self.bias_name)
        return logits if bias is None else op.Add(logits, bias)

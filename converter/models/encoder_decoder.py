"""EncoderDecoderModel (`encoder-decoder`) of a BERT encoder and a BERT decoder (bert2bert), on
the encoder-decoder contract of converter/models/seq2seq.py.

config.json nests both sides (`encoder`, `decoder`), each read with BERT's rules; the top
level gives decoder_start_token_id. The encoder is converter/models/encoder.py's BertBody
under `encoder` (its pooler unread). The decoder is BertLMHeadModel under `decoder`: `bert`'s
embeddings (positions past .., token type 0), post-norm layers of causal self-attention,
cross-attention over the encoder output (`crossattention`, BERT's attention names) and the MLP,
then `cls.predictions` over the decoder's word table (or its own `decoder` where untied).
Other sub-model types, and sides of different widths (transformers' enc_to_dec_proj), are
refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.cache import CROSS, LayerCache, kv_cache
from converter.components.seq2seq_attention import Steps, decoder_kernels, heads_first
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM, ExecutionProvider
from converter.models.encoder import (
    BertBody,
    BertEmbeddings,
    BertIntermediate,
    BertPredictions,
    DenseNorm,
)
from converter.models.seq2seq import Seq2SeqModel
from converter.registry import Family
from converter.tasks.encoding import TextInputs
from converter.tasks.seq2seq import SEQ2SEQ_TASKS

SIDES = ("bert",)  # the sub-model types built on each side
PARTS = ("encoder", "decoder", "both")
TIED_HEAD = "decoder.cls.predictions.decoder.weight"


@dataclass(frozen=True)
class EncoderDecoderConfig:
    model_type: str
    encoder: EncoderConfig
    decoder: EncoderConfig
    decoder_start_token_id: int
    pad_token_id: int | None

    @property
    def d_model(self) -> int:
        return self.decoder.hidden_size

    @property
    def hidden_size(self) -> int:
        return self.d_model

    @property
    def vocab_size(self) -> int:
        return self.decoder.vocab_size

    @property
    def logits_size(self) -> int:
        return self.vocab_size


class EncoderDecoderRules:
    """The `encoder` and `decoder` sections, each as its own type reads (BERT only)."""

    nested_types = SIDES  # scripts/gen_config_defaults.py: the sections' own defaults

    def select(self, raw: dict) -> dict:
        return raw

    def side(self, r: ConfigReader, key: str) -> tuple[dict, str]:
        section = r.raw.get(key)
        if not isinstance(section, dict):
            raise ConfigError(f"'{key}' must be the {key}'s config (a JSON object)")
        kind = section.get("model_type")
        if kind not in SIDES:
            raise ConfigError(
                f"'{key}.model_type' = {kind!r} is not supported: encoder-decoder pairs are "
                f"built of {', '.join(SIDES)} on each side"
            )
        return dict(section), kind

    def read(self, r: ConfigReader) -> EncoderDecoderConfig:
        encoder_raw, encoder_type = self.side(r, "encoder")
        decoder_raw, decoder_type = self.side(r, "decoder")
        for key in ("is_decoder", "add_cross_attention"):
            if decoder_raw.pop(key, False) is not True:
                raise ConfigError(f"'decoder.{key}' must be true: the decoder attends the encoder")
        encoder = EncoderRules().read(ConfigReader(encoder_raw, encoder_type))
        decoder = EncoderRules().read(ConfigReader(decoder_raw, decoder_type))
        if encoder.hidden_size != decoder.hidden_size:
            raise ConfigError(
                f"'encoder.hidden_size' = {encoder.hidden_size} differs from 'decoder.hidden_size'"
                f" = {decoder.hidden_size}: transformers' enc_to_dec_proj is not built"
            )
        start = r.get("decoder_start_token_id")
        if start is None:
            raise ConfigError("'decoder_start_token_id' is missing from config.json")
        start = r.int("decoder_start_token_id", lo=0, hi=decoder.vocab_size - 1)
        pad = r.get("pad_token_id")
        return EncoderDecoderConfig(r.model_type, encoder, decoder, start, pad)


class BertCachedSelfAttention(Steps):
    """query, key, value of BERT's attention, as decoder steps: `cached` self-attention,
    `key_value` of the encoder output and `cross`-attention over it."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.query = Linear(size, size, True, dtype)
        self.key = Linear(size, size, True, dtype)
        self.value = Linear(size, size, True, dtype)
        self.heads, self.head_dim = cfg.num_attention_heads, cfg.head_dim
        self.scale = cfg.head_dim**-0.5

    def cached(self, op, x, past_key, past_value, kernel):
        q, k, v = self.query(op, x), self.key(op, x), self.value(op, x)
        return kernel(op, q, k, v, past_key, past_value, self.heads, self.scale)

    def key_value(self, op, source):
        key, value = self.key(op, source), self.value(op, source)
        return (
            heads_first(op, key, self.heads, self.head_dim),
            heads_first(op, value, self.heads, self.head_dim),
        )

    def cross(self, op, x, key, value, kernel):
        return kernel(op, self.query(op, x), key, value, self.heads, self.scale)


class BertDecoderAttention(Steps):
    """`self` (the projections) and `output` (dense, then the post-norm of the residual)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        setattr(self, "self", BertCachedSelfAttention(cfg, dtype))  # noqa: B010 (the checkpoint's name)
        self.output = DenseNorm(cfg.hidden_size, cfg, dtype)

    def cached(self, op, x, past, kernel):
        y, key, value = self.self(op, "cached", x, *past, kernel)
        return self.output(op, y, x), key, value

    def key_value(self, op, source):
        return self.self(op, "key_value", source)

    def cross(self, op, x, key, value, kernel):
        return self.output(op, self.self(op, "cross", x, key, value, kernel), x)


class BertDecoderLayer(Steps):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = BertDecoderAttention(cfg, dtype)
        self.crossattention = BertDecoderAttention(cfg, dtype)
        self.intermediate = BertIntermediate(cfg, dtype)
        self.output = DenseNorm(cfg.intermediate_size, cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {
            "skip_norms": 3 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 2 if plan.has(ENCODER_MHA) else 0,
        }

    def key_value(self, op, encoder_hidden_states):
        return self.crossattention(op, "key_value", encoder_hidden_states)

    def step(self, op, x, past, cross, kernels):
        self_kernel, cross_kernel = kernels
        x, key, value = self.attention(op, "cached", x, past, self_kernel)
        x = self.crossattention(op, "cross", x, *cross, cross_kernel)
        return self.output(op, self.intermediate(op, x), x), key, value


class BertDecoderLayers(Steps):
    """`layer`: BertEncoder's name for the list."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.layer = nn.ModuleList(
            [BertDecoderLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        )

    def cross_kv(self, op, encoder_hidden_states):
        return [layer(op, "key_value", encoder_hidden_states) for layer in self.layer]

    def decode(self, op, x, self_past, cross, kernels):
        presents = []
        for layer, past, layer_cross in zip(self.layer, self_past, cross, strict=True):
            x, key, value = layer(op, "step", x, past, layer_cross, kernels)
            presents.append((key, value))
        return x, presents


class DecoderEmbeddings(BertEmbeddings):
    """BERT's embeddings of new tokens at positions past .. past + new (token type 0)."""

    def forward(self, op, input_ids, past):
        total = op.Add(past, op.Squeeze(op.Shape(input_ids, start=1, end=2), [0]))
        positions = op.Unsqueeze(op.Range(past, total, 1), [0])
        tokens = self.token_sum(op, TextInputs(input_ids, None, None))
        return self.LayerNorm(op, op.Add(tokens, self.position_embeddings(op, positions)))


class BertDecoderBody(Steps):
    """BertLMHeadModel's `bert`: the embeddings, then the layers."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.embeddings = DecoderEmbeddings(cfg, dtype)
        self.encoder = BertDecoderLayers(cfg, dtype)

    def cross_kv(self, op, encoder_hidden_states):
        return self.encoder(op, "cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, self_past, cross, kernels):
        past = op.Squeeze(op.Shape(self_past[0][0], start=2, end=3), [0])
        x = self.embeddings(op, input_ids, past)
        return self.encoder(op, "decode", x, self_past, cross, kernels)


class BertLMDecoder(Steps):
    """BertLMHeadModel: `bert` and `cls` (the word table tied unless the checkpoint has its
    own decoder)."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, tied: bool):
        super().__init__()
        self.bert = BertDecoderBody(cfg, dtype)
        self.cls = BertPredictions(cfg, dtype, tied, decoder_bias=True)

    def cross_kv(self, op, encoder_hidden_states):
        return self.bert(op, "cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, self_past, cross, kernels):
        hidden, presents = self.bert(op, "decode", input_ids, self_past, cross, kernels)
        table = self.bert.embeddings.word_embeddings.weight
        return self.cls(op, hidden, table), presents


class EncoderDecoderModel(Steps):
    """transformers' EncoderDecoderModel: `encoder` (BertModel) and `decoder`
    (BertLMHeadModel), one of them per part."""

    heads = SEQ2SEQ_TASKS
    head_tasks = Seq2SeqModel.head_tasks
    headless_task = "text2text-generation"  # EncoderDecoderModel is the generating class
    modality = "text"
    coverage_scope = "seq2seq"

    def __init__(
        self,
        cfg: EncoderDecoderConfig,
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
        encoding, decoding = part in ("encoder", "both"), part in ("decoder", "both")
        self.encoder = BertBody(cfg.encoder, dtype, ep, pooled=False) if encoding else None
        tied = TIED_HEAD not in tensors
        self.decoder = BertLMDecoder(cfg.decoder, dtype, tied) if decoding else None

    def part(self, which: str) -> EncoderDecoderModel:
        return type(self)(self.cfg, self.dtype, self.ep, self.task, self.tensors, part=which)

    # -- the contract --------------------------------------------------------------------

    def encode(self, op, input_ids, attention_mask):
        return self(op, "_encode", input_ids, attention_mask)

    encoder_inputs = Seq2SeqModel.encoder_inputs  # text: input_ids, attention_mask

    def cross_kv(self, op, encoder_hidden_states) -> list[tuple]:
        return self(op, "_cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, encoder_attention_mask, self_past, cross):
        return self(op, "_decode", input_ids, encoder_attention_mask, self_past, cross)

    def self_caches(self) -> list[LayerCache]:
        d = self.cfg.decoder
        return [kv_cache(d.num_attention_heads, d.head_dim) for _ in range(d.num_hidden_layers)]

    def cross_caches(self) -> list[LayerCache]:
        d = self.cfg.decoder
        shape = (d.num_attention_heads, "encoder_sequence", d.head_dim)
        return [LayerCache(CROSS, shape, shape) for _ in range(d.num_hidden_layers)]

    # -- the steps, in this module's scope -------------------------------------------------

    def _encode(self, op, input_ids, attention_mask):
        hidden, _ = self.encoder(op, TextInputs(input_ids, attention_mask, None))
        return hidden

    def _cross_kv(self, op, encoder_hidden_states):
        return self.decoder(op, "cross_kv", encoder_hidden_states)

    def _decode(self, op, input_ids, encoder_attention_mask, self_past, cross):
        kernels = decoder_kernels(op, self.ep, encoder_attention_mask, self.dtype)
        return self.decoder(op, "decode", input_ids, self_past, cross, kernels)


# the encoder's pooler (EncoderDecoderModel never reads it) and buffers older checkpoints carry
ENCODER_DECODER_UNUSED = (
    r"encoder\.pooler\..*",
    r"(encoder|decoder\.bert)\.embeddings\.(position_ids|token_type_ids)",
)


FAMILIES = [
    Family(
        "encoder-decoder",
        EncoderDecoderModel,
        "EncoderDecoderModel of a BERT encoder and a BERT decoder with cross-attention "
        "(bert2bert); other sub-model types refused by name",
        ("google/bert2bert_L-24_wmt_de_en",),
        rules=EncoderDecoderRules(),
        task="text2text-generation",
        category="seq2seq",
        unused=ENCODER_DECODER_UNUSED,
    )
]

"""Moonshine: a speech encoder-decoder over the raw 16 kHz waveform. The encoder's stem is
conv1 (kernel 127, stride 64, no bias), tanh, a one-group GroupNorm, conv2 (7, stride 3) and
conv3 (3, stride 2) with GELU; then pre-norm layers (LayerNorms without bias) whose attention
rotates the first `partial_rotary_factor` of each head in interleaved pairs, and a final
layer_norm. The decoder: the same layers with a cross-attention, a gated MLP (fc1 makes value
and gate, act(gate) * value), a final `norm` and the head `proj_out` (tied to the tokens by
default). The waveform's attention_mask is kept at every 384th sample (the stem's stride) for
the encoder's attention and the decoder's cross-attention, as transformers does.
"""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.components.attention import Rotary
from converter.components.conv import Conv1d
from converter.components.conv2d import GroupNorm
from converter.components.embedding import Embedding
from converter.components.encoder_attention import encoder_attention
from converter.components.seq2seq_attention import Seq2SeqAttention, Steps, decoder_kernels
from converter.config.reader import ConfigReader
from converter.config.rope import parse_rope
from converter.config.seq2seq import Seq2SeqConfig, Seq2SeqRules
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.seq2seq import sublayer
from converter.models.speech_seq2seq import SpeechSeq2SeqModel
from converter.registry import Family
from converter.tasks.seq2seq import BATCH
from converter.tasks.speech_seq2seq import SPEECH_TASK

STRIDE = 64 * 3 * 2  # the stem's convolutions: one encoder position per 384 samples
SAMPLES = "num_samples"


class MoonshineRules(Seq2SeqRules):
    def __init__(self) -> None:
        super().__init__(pre_norm=True, embedding_norm=False, position_kind="none")

    def read(self, r: ConfigReader) -> Seq2SeqConfig:
        r.alias(
            hidden_size="d_model",
            encoder_num_hidden_layers="encoder_layers",
            decoder_num_hidden_layers="decoder_layers",
            encoder_num_attention_heads="encoder_attention_heads",
            decoder_num_attention_heads="decoder_attention_heads",
        )
        r.raw["encoder_ffn_dim"] = r.raw["decoder_ffn_dim"] = r.int("intermediate_size")
        for stack in ("encoder", "decoder"):
            kv, heads = f"{stack}_num_key_value_heads", r.int(f"{stack}_attention_heads")
            if r.get(kv, default=heads) != heads:
                # transformers 5.24 shapes Moonshine's queries by the key/value heads
                r.refuse(kv, "transformers' Moonshine runs only as many as the query heads")
        return super().read(r)

    def read_extra(self, r: ConfigReader) -> dict:
        head_dim = r.int("d_model") // r.int("decoder_attention_heads")
        return {
            "encoder_act": r.str("encoder_hidden_act", default="gelu"),
            "decoder_act": r.str("decoder_hidden_act", default="silu"),
            "attention_bias": r.bool("attention_bias", False),
            # pad_head_dim_to_multiple_of pads q, k and v with zeros: the same attention
            "rope": replace(parse_rope(r.raw, head_dim=head_dim), interleaved=True),
        }


def norm(cfg: Seq2SeqConfig, dtype: ir.DataType) -> LayerNorm:
    return LayerNorm(cfg.d_model, 1e-5, dtype, bias=False)


class MoonshineAttention(Seq2SeqAttention):
    names = ("q_proj", "k_proj", "v_proj", "o_proj")

    def __init__(self, cfg: Seq2SeqConfig, heads: int, dtype: ir.DataType):
        bias = cfg.extra["attention_bias"]
        super().__init__(cfg.d_model, heads, cfg.head_dim, dtype, biases=(bias, bias, bias, False))


class MoonshineMLP(nn.Module):
    """fc1, the activation, fc2; `gated`: fc1 makes the value and the gate, act(gate) * value."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, act: str, gated: bool):
        super().__init__()
        width, inner = cfg.d_model, cfg.decoder_ffn_dim
        self.fc1 = Linear(width, 2 * inner if gated else inner, True, dtype)
        self.fc2 = Linear(inner, width, True, dtype)
        self.act, self.gated = act, gated

    def forward(self, op, x):
        h = self.fc1(op, x)
        if self.gated:
            value, gate = op.Split(h, axis=-1, num_outputs=2, _outputs=2)
            h = op.Mul(activation(op, self.act, gate), value)
        else:
            h = activation(op, self.act, h)
        return self.fc2(op, h)


class Rotated:
    """Rotates the new queries and keys before the attention kernel it wraps."""

    def __init__(self, kernel, rotary: Rotary, rope):
        self.kernel, self.rotary, self.rope = kernel, rotary, rope

    def rotate(self, op, q, k, heads: int):
        return self.rotary(op, q, heads, self.rope), self.rotary(op, k, heads, self.rope)


class RotatedEncoderKernel(Rotated):
    def __call__(self, op, q, k, v, heads: int, scale: float, bias=None):
        q, k = self.rotate(op, q, k, heads)
        return self.kernel(op, q, k, v, heads, scale, bias)


class RotatedCachedKernel(Rotated):
    def __call__(self, op, q, k, v, past_key, past_value, heads: int, scale: float, bias=None):
        q, k = self.rotate(op, q, k, heads)
        return self.kernel(op, q, k, v, past_key, past_value, heads, scale, bias)


class MoonshineEncoderLayer(nn.Module):
    sublayers = 2

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.self_attn = MoonshineAttention(cfg, cfg.encoder_heads, dtype)
        self.mlp = MoonshineMLP(cfg, dtype, cfg.extra["encoder_act"], gated=False)
        self.input_layernorm = norm(cfg, dtype)
        self.post_attention_layernorm = norm(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: int(plan.has(ENCODER_MHA))}

    def forward(self, op, x, kernel):
        attend = lambda h: self.self_attn(op, "encoder", h, kernel, None)  # noqa: E731
        x = sublayer(op, x, self.input_layernorm, attend, True)
        return sublayer(op, x, self.post_attention_layernorm, lambda h: self.mlp(op, h), True)


class MoonshineDecoderLayer(Steps):
    sublayers = 3

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.self_attn = MoonshineAttention(cfg, cfg.decoder_heads, dtype)
        self.encoder_attn = MoonshineAttention(cfg, cfg.decoder_heads, dtype)
        self.mlp = MoonshineMLP(cfg, dtype, cfg.extra["decoder_act"], gated=True)
        self.input_layernorm = norm(cfg, dtype)
        self.post_attention_layernorm = norm(cfg, dtype)
        self.final_layernorm = norm(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {ENCODER_MHA: 2 * int(plan.has(ENCODER_MHA))}

    def key_value(self, op, encoder_hidden_states):
        return self.encoder_attn(op, "key_value", encoder_hidden_states)

    def step(self, op, x, past, cross, kernels):
        self_kernel, cross_kernel = kernels
        presents = []

        def attend(h):
            y, key, value = self.self_attn(op, "cached", h, *past, self_kernel, None)
            presents.extend((key, value))
            return y

        def attend_encoder(h):
            return self.encoder_attn(op, "cross", h, *cross, cross_kernel)

        x = sublayer(op, x, self.input_layernorm, attend, True)
        x = sublayer(op, x, self.post_attention_layernorm, attend_encoder, True)
        x = sublayer(op, x, self.final_layernorm, lambda h: self.mlp(op, h), True)
        return x, *presents


def _skip_norms(plan, layers: int, sublayers: int) -> dict[str, int]:
    # every norm reads a residual sum but the first (the stem's or the tokens' output)
    return {"skip_norms": layers * sublayers if plan.has(SKIP_NORM) else 0}


class MoonshineEncoder(Steps):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        width = cfg.d_model
        self.conv1 = Conv1d(1, width, 127, dtype, stride=64, bias=False)
        self.groupnorm = GroupNorm(1, width, 1e-5, dtype)
        self.conv2 = Conv1d(width, 2 * width, 7, dtype, stride=3)
        self.conv3 = Conv1d(2 * width, width, 3, dtype, stride=2)
        self.layers = nn.ModuleList(
            [MoonshineEncoderLayer(cfg, dtype) for _ in range(cfg.encoder_layers)]
        )
        self.layer_norm = norm(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return _skip_norms(plan, len(self.layers), MoonshineEncoderLayer.sublayers)

    def stem(self, op, samples):
        x = self.groupnorm(op, op.Tanh(self.conv1(op, op.Unsqueeze(samples, [1]))))
        x = op.Gelu(self.conv3(op, op.Gelu(self.conv2(op, x))))
        return op.Transpose(x, perm=[0, 2, 1])

    def encode(self, op, x, kernel):
        for layer in self.layers:
            x = layer(op, x, kernel)
        return self.layer_norm(op, x)


class MoonshineDecoder(Steps):
    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType):
        super().__init__()
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.d_model, dtype)
        self.layers = nn.ModuleList(
            [MoonshineDecoderLayer(cfg, dtype) for _ in range(cfg.decoder_layers)]
        )
        self.norm = norm(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return _skip_norms(plan, len(self.layers), MoonshineDecoderLayer.sublayers)

    def cross_kv(self, op, encoder_hidden_states):
        return [layer(op, "key_value", encoder_hidden_states) for layer in self.layers]

    def decode(self, op, input_ids, self_past, cross, kernels):
        x = self.embed_tokens(op, input_ids)
        presents = []
        for layer, past, layer_cross in zip(self.layers, self_past, cross, strict=True):
            x, key, value = layer(op, "step", x, past, layer_cross, kernels)
            presents.append((key, value))
        return self.norm(op, x), presents


class MoonshineBody(Steps):
    """`model`: the encoder and the decoder of one part."""

    def __init__(self, cfg: Seq2SeqConfig, dtype: ir.DataType, part: str):
        super().__init__()
        self.encoder = MoonshineEncoder(cfg, dtype) if part in ("encoder", "both") else None
        self.decoder = MoonshineDecoder(cfg, dtype) if part in ("decoder", "both") else None

    def encode(self, op, samples, attention_mask, ep, dtype, rope):
        x = self.encoder(op, "stem", samples)
        frames = op.Shape(x, start=1, end=2)
        mask = None if attention_mask is None else kept_samples(op, attention_mask, frames)
        rotary = Rotary(dtype, positions(op, op.Shape(x, start=0, end=1), 0, frames))
        kernel = RotatedEncoderKernel(encoder_attention(op, ep, mask, dtype), rotary, rope)
        return self.encoder(op, "encode", x, kernel)

    def cross_kv(self, op, encoder_hidden_states):
        return self.decoder(op, "cross_kv", encoder_hidden_states)

    def decode(self, op, input_ids, encoder_attention_mask, self_past, cross, ep, dtype, rope):
        frames = op.Shape(cross[0][0], start=2, end=3)
        mask = encoder_attention_mask
        mask = None if mask is None else kept_samples(op, mask, frames)
        self_kernel, cross_kernel = decoder_kernels(op, ep, mask, dtype)
        past = op.Shape(self_past[0][0], start=2, end=3)
        new = op.Shape(input_ids, start=1, end=2)
        batch = op.Shape(input_ids, start=0, end=1)
        rotary = Rotary(dtype, positions(op, batch, past, new))
        kernels = (RotatedCachedKernel(self_kernel, rotary, rope), cross_kernel)
        return self.decoder(op, "decode", input_ids, self_past, cross, kernels)


def kept_samples(op, attention_mask, frames):
    """The waveform's mask at every STRIDE-th sample, its first `frames` [1] (transformers'
    attention_mask[..., ::384][..., :frames])."""
    every = op.Slice(attention_mask, [0], [2**62], [1], [STRIDE])
    return op.Slice(every, [0], frames, [1])


def positions(op, batch, start, count):
    """start, start + 1, ... (`count` [1] of them) for each of `batch` [1] rows."""
    first = start if isinstance(start, int) else op.Squeeze(start, [0])
    end = op.Add(start, count) if not isinstance(start, int) else count
    row = op.Unsqueeze(op.Range(first, op.Squeeze(end, [0]), 1), [0])
    return op.Expand(row, op.Concat(batch, [1], axis=0))


class MoonshineModel(SpeechSeq2SeqModel):
    speech_body_cls = MoonshineBody

    def encoder_inputs(self, dtype: ir.DataType) -> dict[str, tuple[ir.DataType, list]]:
        """The 16 kHz waveform (float32 in every dtype) and its mask, 1 on real samples."""
        return {
            "input_values": (ir.DataType.FLOAT, [BATCH, SAMPLES]),
            "attention_mask": (ir.DataType.INT64, [BATCH, SAMPLES]),
        }

    def _encode(self, op, samples, attention_mask):
        if self.dtype != ir.DataType.FLOAT:
            samples = op.Cast(samples, to=self.dtype)
        rope = self.cfg.extra["rope"]
        return self.body(op, "encode", samples, attention_mask, self.ep, self.dtype, rope)

    def _decode(self, op, input_ids, encoder_attention_mask, self_past, cross):
        rope = self.cfg.extra["rope"]
        args = (input_ids, encoder_attention_mask, self_past, cross, self.ep, self.dtype, rope)
        hidden, presents = self.body(op, "decode", *args)
        return self.logits(op, hidden), presents


FAMILIES = [
    Family(
        "moonshine",
        MoonshineModel,
        "speech encoder-decoder over the raw waveform: a strided conv stem with GroupNorm, "
        "partial interleaved rotary attention, a gated decoder MLP",
        ("UsefulSensors/moonshine-tiny", "UsefulSensors/moonshine-base"),
        rules=MoonshineRules(),
        task=SPEECH_TASK,
        category="seq2seq",
        unused=(r"proj_out\.weight",),
        prefix="model.",
    ),
]

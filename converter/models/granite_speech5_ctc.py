"""Granite Speech 5 CTC: a Conformer over stacked mel features (the processor's delta-expanded
frames, stacked in pairs). A dense layer to the hidden size, Conformer blocks
(components/conformer.py) whose attention runs block-wise: the frames cut into `context_size`
chunks (the last right-padded), each attending only within itself with Shaw's relative key
embeddings. The `subsample_layers` blocks halve time: a stride-2 depthwise conv added to the
pair-averaged residual. After the middle layer the CTC head's softmax is projected back into
the frames (self-conditioning); the same head (tied by default) gives the logits."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear, activation
from converter.components.batch_norm import BATCH_NORM_UNUSED, BatchNorm1d
from converter.components.conformer import ConformerBlock, frame_mask
from converter.components.conv import Conv1d
from converter.components.embedding import Embedding
from converter.components.encoder_attention import encoder_attention
from converter.config.conformer import MAX_KERNEL, ConformerConfig, ConformerRules
from converter.errors import ConfigError
from converter.execution_providers import SKIP_NORM
from converter.models.parakeet import CTC
from converter.registry import Family
from converter.tasks.audio_encoding import FRAMES, AudioInputs
from converter.tasks.encoding import BATCH

# the processor's frames: mel bins, their deltas, stacked in pairs
STACKED_BINS = 4


class GraniteRules(ConformerRules):
    def read_subsampling(self, r):
        # the subsampling blocks' depthwise conv: the convolution module's width, stride 2
        width = r.int("conv_expansion_factor") * r.int("hidden_size")
        return width, r.int("conv_kernel_size", hi=MAX_KERNEL), 2

    def read_extra(self, r):
        if r.int("conv_kernel_size") % 2 == 0:
            # transformers pads it (k - 1) / 2 each side: one frame short of the residual
            r.refuse("conv_kernel_size", "the depthwise kernel must be odd")
        layers = r.int("num_hidden_layers")
        if layers < 2:
            r.refuse("num_hidden_layers", "2 or more are built (the CTC self-conditioning)")
        subsample = r.get("subsample_layers", default=[0, 1])
        if not isinstance(subsample, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in subsample
        ):
            raise ConfigError(f"'subsample_layers' must list layer indices, got {subsample!r}")
        context = r.int("context_size")
        positions = r.int("max_position_embeddings")
        if context > positions:
            r.refuse("context_size", f"exceeds max_position_embeddings = {positions}")
        return {
            "subsample_layers": frozenset(subsample),
            "context_size": context,
            "max_position_embeddings": positions,
            "conv_expansion_factor": r.int("conv_expansion_factor"),
            "encoder_vocab_size": r.int("vocab_size"),
        }

    def read(self, top):
        cfg = super().read(top)
        if cfg.extra["encoder_vocab_size"] != cfg.vocab_size:
            raise ConfigError(
                f"'encoder_config.vocab_size' = {cfg.extra['encoder_vocab_size']} differs from "
                f"'vocab_size' = {cfg.vocab_size}"
            )
        tied = top.bool("tie_word_embeddings", True)
        return dataclasses.replace(
            cfg, mel_bins=cfg.mel_bins * STACKED_BINS, extra={**cfg.extra, "tied_head": tied}
        )


class BlockShawAttention(nn.Module):
    """Attention within `context_size` chunks folded into the batch: scores q.k + q.e(i - j),
    e a learned embedding per distance, both scaled; the second rides on the kernel's bias.
    `kernel` is built over the chunks' frame mask (see `chunk_mask`)."""

    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.q_proj = Linear(size, size, False, dtype)
        self.k_proj = Linear(size, size, False, dtype)
        self.v_proj = Linear(size, size, False, dtype)
        self.o_proj = Linear(size, size, True, dtype)
        self.size = size
        self.rel_pos_emb = Embedding(
            2 * cfg.extra["max_position_embeddings"] + 1, cfg.head_dim, dtype
        )
        self.heads, self.head_dim = cfg.num_attention_heads, cfg.head_dim
        context = cfg.extra["context_size"]
        steps = np.arange(context)
        self.distances = steps[:, None] - steps[None, :] + cfg.extra["max_position_embeddings"]
        self.context = context

    def forward(self, op, x, kernel, positions):
        frames = op.Shape(x, start=1, end=2)
        chunks = op.Reshape(
            op.Pad(x, chunk_padding(op, frames, self.context)), [-1, self.context, self.size]
        )
        q, k, v = self.q_proj(op, chunks), self.k_proj(op, chunks), self.v_proj(op, chunks)
        scale = self.head_dim**-0.5
        embedded = self.rel_pos_emb(op, op.Constant(value=ir.tensor(self.distances)))
        # per query frame: [chunks * heads, head_dim] times [head_dim, key frames]
        queries = op.Transpose(op.Reshape(q, [0, 0, -1, self.head_dim]), perm=[1, 0, 2, 3])
        queries = op.Reshape(queries, [self.context, -1, self.head_dim])
        scores = op.MatMul(queries, op.Transpose(embedded, perm=[0, 2, 1]))
        scores = op.Reshape(scores, [self.context, -1, self.heads, self.context])
        bias = op.Mul(op.Transpose(scores, perm=[1, 2, 0, 3]), scale)
        out = kernel(op, q, k, v, self.heads, scale, bias)
        out = op.Reshape(out, op.Concat(op.Shape(x, start=0, end=1), [-1, self.size], axis=0))
        return self.o_proj(op, op.Slice(out, [0], frames, [1]))


def chunk_shortfall(op, frames, context: int):
    """[1] int64: the frames that pad `frames` ([1]) up to whole chunks of `context`."""
    return op.Mod(op.Sub(context, op.Mod(frames, context)), context)


def chunk_padding(op, frames, context: int):
    """Pads for a [batch, frames, hidden] tensor up to whole chunks of `context` frames."""
    return op.Concat([0, 0, 0, 0], chunk_shortfall(op, frames, context), [0], axis=0)


def chunk_mask(op, mask, context: int):
    """[batch * chunks, context] of the frame mask [batch, frames], padded with False."""
    short = chunk_shortfall(op, op.Shape(mask, start=1, end=2), context)
    padded = op.Pad(op.Cast(mask, to=ir.DataType.INT64), op.Concat([0, 0], [0], short, axis=0))
    return op.Reshape(padded, [-1, context])


class GraniteConvolution(nn.Module):
    """Linear to twice the inner width, GLU, dropped frames zeroed, depthwise conv ((k - 1) / 2
    padding each side; `stride` 2 in subsampling blocks), BatchNorm, SiLU, linear back."""

    stride = 1

    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType):
        super().__init__()
        size, kernel = cfg.hidden_size, cfg.conv_kernel_size
        inner = size * cfg.extra["conv_expansion_factor"]
        self.pointwise_lin1 = Linear(size, 2 * inner, True, dtype)
        pad = (kernel - 1) // 2
        self.depthwise_conv = Conv1d(
            inner, inner, kernel, dtype, groups=inner, bias=False, stride=self.stride, padding=pad
        )
        self.norm = BatchNorm1d(inner, dtype)
        self.pointwise_lin2 = Linear(inner, size, True, dtype)

    def forward(self, op, x, keep):
        """`keep`: [batch, 1, frames] 1 on the frames the mask keeps, else 0."""
        values, gates = op.Split(self.pointwise_lin1(op, x), axis=2, num_outputs=2, _outputs=2)
        x = op.Mul(op.Mul(values, op.Sigmoid(gates)), op.Transpose(keep, perm=[0, 2, 1]))
        x = self.depthwise_conv(op, op.Transpose(x, perm=[0, 2, 1]))
        x = activation(op, "silu", self.norm(op, x))
        return self.pointwise_lin2(op, op.Transpose(x, perm=[0, 2, 1]))


class StridedConvolution(GraniteConvolution):
    stride = 2


class GraniteBlock(ConformerBlock):
    attention_cls = BlockShawAttention
    convolution_cls = GraniteConvolution

    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype, (1, 0.5), (1, 1))


class SubsamplingBlock(GraniteBlock):
    """The block with the strided conv added to the residual averaged over frame pairs (an odd
    last frame dropped): half the frames out."""

    convolution_cls = StridedConvolution

    def forward(self, op, x, kernel, positions, keep):
        x = op.Add(x, op.Mul(self.feed_forward1(op, self.norm_feed_forward1(op, x)), 0.5))
        x = op.Add(x, self.self_attn(op, self.norm_self_att(op, x), kernel, positions))
        conv = self.conv(op, self.norm_conv(op, x), keep)
        halves = op.Div(op.Shape(x, start=1, end=2), 2)
        pairs = op.Slice(x, [0], op.Mul(halves, 2), [1])
        pooled = op.ReduceMean(op.Reshape(pairs, [0, -1, 2, self.self_attn.size]), [2], keepdims=0)
        x = op.Add(pooled, op.Slice(conv, [0], halves, [1]))
        x = op.Add(x, op.Mul(self.feed_forward2(op, self.norm_feed_forward2(op, x)), 0.5))
        return self.norm_out(op, x)


class GraniteEncoder(nn.Module):
    def __init__(self, cfg: ConformerConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.input_linear = Linear(cfg.mel_bins, cfg.hidden_size, True, dtype)
        subsample = cfg.extra["subsample_layers"]
        self.layers = nn.ModuleList(
            [
                (SubsamplingBlock if i in subsample else GraniteBlock)(cfg, dtype)
                for i in range(cfg.num_hidden_layers)
            ]
        )
        self.out = Linear(cfg.hidden_size, cfg.vocab_size, True, dtype)
        self.out_mid = Linear(cfg.vocab_size, cfg.hidden_size, True, dtype)
        self.cfg, self.ep, self.dtype = cfg, ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        # the layer after the self-conditioning: its first norm reads that sum too
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, features, attention_mask):
        cfg = self.cfg
        if self.dtype != ir.DataType.FLOAT:
            features = op.Cast(features, to=self.dtype)
        lengths = op.ReduceSum(attention_mask, [1], keepdims=0)
        x = self.input_linear(op, features)
        mask = frame_mask(op, x, lengths)
        keep = op.Unsqueeze(op.Cast(mask, to=self.dtype), [1])
        x = op.Mul(x, op.Transpose(keep, perm=[0, 2, 1]))
        context = cfg.extra["context_size"]
        kernel = encoder_attention(op, self.ep, chunk_mask(op, mask, context), self.dtype)
        for i, layer in enumerate(self.layers):
            x = layer(op, x, kernel, None, keep)
            if i in cfg.extra["subsample_layers"]:
                lengths = op.Div(lengths, 2)
                mask = frame_mask(op, x, lengths)
                keep = op.Unsqueeze(op.Cast(mask, to=self.dtype), [1])
                kernel = encoder_attention(op, self.ep, chunk_mask(op, mask, context), self.dtype)
            if i + 1 == cfg.num_hidden_layers // 2:
                posteriors = op.Softmax(self.out(op, x), axis=-1)
                x = op.Add(x, self.out_mid(op, posteriors))
        return x


class GraniteSpeech5ForCTC(nn.Module):
    heads = (CTC,)
    modality = "audio"

    def __init__(self, cfg: ConformerConfig, dtype, ep, task: str, tensors):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        self.encoder = GraniteEncoder(cfg, dtype, ep)
        if not cfg.extra["tied_head"]:
            self.ctc_head = Linear(cfg.hidden_size, cfg.vocab_size, True, dtype)
        self.cfg = cfg

    def forward(self, op, inputs: AudioInputs) -> dict:
        hidden = self.encoder(op, inputs.input_values, inputs.attention_mask)
        head = self.encoder.out if self.cfg.extra["tied_head"] else self.ctc_head
        return {"logits": (head(op, hidden), [BATCH, FRAMES, self.cfg.vocab_size])}


FAMILIES = [
    Family(
        "granite_speech5_ctc",
        GraniteSpeech5ForCTC,
        "Conformer over stacked mel features: block-wise attention with Shaw relative "
        "positions, subsampling blocks (stride-2 conv, pooled residual), self-conditioned CTC",
        ("ibm-granite/granite-speech-5.0-470m-turboctc",),
        rules=GraniteRules("granite_speech5_encoder", norm_eps=1e-5, norm_bias=True),
        task=CTC,
        category="audio",
        unused=(BATCH_NORM_UNUSED,),
    ),
]

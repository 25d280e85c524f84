"""Audio Spectrogram Transformer: a ViT over the log-mel spectrogram. Patches of the spectrogram
(a strided Conv2d over frequency and time) after a class and a distillation token, learned
positions, pre-norm layers with ViT's names, a final LayerNorm; the pooled output is the mean
of the two tokens, and the classifier a LayerNorm and a dense layer over it. Every input has
the processor's fixed frame count: there is no mask."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.components.encoder_attention import encoder_attention
from converter.config.spectrogram import SpectrogramConfig, SpectrogramRules
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertIntermediate, BertSelfAttention
from converter.registry import Family
from converter.tasks.encoding import BATCH

TASKS = ("audio-classification", "feature-extraction")


class PatchConv(nn.Module):
    """torch.nn.Conv2d from one channel, square kernel, strides over (frequency, time)."""

    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType):
        super().__init__()
        size, patch = cfg.hidden_size, cfg.patch_size
        self.weight = nn.Parameter([size, 1, patch, patch], dtype)
        self.bias = nn.Parameter([size], dtype)
        self.kernel = [patch, patch]
        self.strides = [cfg.frequency_stride, cfg.time_stride]

    def forward(self, op, x):
        return op.Conv(x, self.weight, self.bias, kernel_shape=self.kernel, strides=self.strides)


class PatchEmbeddings(nn.Module):
    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType):
        super().__init__()
        self.projection = PatchConv(cfg, dtype)

    def forward(self, op, spectrogram):
        """[batch, frames, mel bins] -> [batch, patches, hidden], frequency-major."""
        image = op.Unsqueeze(op.Transpose(spectrogram, perm=[0, 2, 1]), [1])
        patches = op.Reshape(self.projection(op, image), [0, 0, -1])
        return op.Transpose(patches, perm=[0, 2, 1])


class SpectrogramEmbeddings(nn.Module):
    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.cls_token = nn.Parameter([1, 1, size], dtype)
        self.distillation_token = nn.Parameter([1, 1, size], dtype)
        self.patch_embeddings = PatchEmbeddings(cfg, dtype)
        self.position_embeddings = nn.Parameter([1, cfg.patches + 2, size], dtype)

    def forward(self, op, spectrogram):
        patches = self.patch_embeddings(op, spectrogram)
        shape = op.Concat(op.Shape(spectrogram, start=0, end=1), [1, 1], axis=0)
        tokens = [op.Expand(t, shape) for t in (self.cls_token, self.distillation_token)]
        return op.Add(op.Concat(*tokens, patches, axis=1), self.position_embeddings)


class SelfAttentionBlock(nn.Module):
    """ViT's `attention`: `attention` (query, key, value) and `output.dense`."""

    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = BertSelfAttention(cfg, dtype)
        self.output = Dense(cfg.hidden_size, cfg.hidden_size, dtype)

    def forward(self, op, x, kernel):
        return self.output(op, self.attention(op, x, kernel))


class Dense(nn.Module):
    def __init__(self, in_size: int, out_size: int, dtype: ir.DataType):
        super().__init__()
        self.dense = Linear(in_size, out_size, True, dtype)

    def forward(self, op, x):
        return self.dense(op, x)


class SpectrogramLayer(nn.Module):
    """Pre-norm: x += attention(layernorm_before(x)); x += output(intermediate(layernorm_after))."""

    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType):
        super().__init__()
        self.attention = SelfAttentionBlock(cfg, dtype)
        self.intermediate = BertIntermediate(cfg, dtype)
        self.output = Dense(cfg.intermediate_size, cfg.hidden_size, dtype)
        self.layernorm_before = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.layernorm_after = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # layernorm_after reads the attention's residual sum; the next norm (the next layer's
        # layernorm_before, or the final one) reads the MLP's
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel):
        x = op.Add(self.attention(op, self.layernorm_before(op, x), kernel), x)
        return op.Add(self.output(op, self.intermediate(op, self.layernorm_after(op, x))), x)


class SpectrogramEncoder(nn.Module):
    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType):
        super().__init__()
        layers = [SpectrogramLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers)]
        self.layer = nn.ModuleList(layers)

    def forward(self, op, x, kernel):
        for layer in self.layer:
            x = layer(op, x, kernel)
        return x


class SpectrogramBody(nn.Module):
    """ASTModel: (last hidden state, pooled output)."""

    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.embeddings = SpectrogramEmbeddings(cfg, dtype)
        self.encoder = SpectrogramEncoder(cfg, dtype)
        self.layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.ep, self.dtype = ep, dtype

    def forward(self, op, spectrogram):
        kernel = encoder_attention(op, self.ep, None, self.dtype)
        hidden = self.layernorm(op, self.encoder(op, self.embeddings(op, spectrogram), kernel))
        tokens = op.Slice(hidden, [0], [2], [1])
        return hidden, op.ReduceMean(tokens, [1], keepdims=0)


class ClassifierHead(nn.Module):
    def __init__(self, cfg: SpectrogramConfig, dtype: ir.DataType):
        super().__init__()
        self.layernorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)
        self.dense = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def forward(self, op, pooled):
        return self.dense(op, self.layernorm(op, pooled))


class ASTModel(nn.Module):
    heads = TASKS
    modality = "audio"

    def __init__(self, cfg: SpectrogramConfig, dtype, ep, task: str, tensors):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        self.audio_spectrogram_transformer = SpectrogramBody(cfg, dtype, ep)
        self.classifier = ClassifierHead(cfg, dtype) if task == "audio-classification" else None
        self.cfg, self.dtype = cfg, dtype

    def forward(self, op, inputs) -> dict:
        spectrogram = inputs.input_values
        if self.dtype != ir.DataType.FLOAT:
            spectrogram = op.Cast(spectrogram, to=self.dtype)
        hidden, pooled = self.audio_spectrogram_transformer(op, spectrogram)
        size = self.cfg.hidden_size
        if self.classifier is not None:
            return {"logits": (self.classifier(op, pooled), [BATCH, self.cfg.num_labels])}
        return {
            "last_hidden_state": (hidden, [BATCH, self.cfg.patches + 2, size]),
            "pooler_output": (pooled, [BATCH, size]),
        }


FAMILIES = [
    Family(
        "audio-spectrogram-transformer",
        ASTModel,
        "a ViT over the log-mel spectrogram (class and distillation tokens, fixed frame count)",
        ("MIT/ast-finetuned-audioset-10-10-0.4593",),
        rules=SpectrogramRules(),
        task="audio-classification",
        category="audio",
        prefix="audio_spectrogram_transformer.",
    ),
]

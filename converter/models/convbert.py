"""ConvBERT: ELECTRA's layout (embeddings of their own width projected up, the generator's masked
LM, a two-layer classifier) whose layers mix two kinds of heads. Of num_attention_heads,
num_attention_heads // head_ratio (at least one) are self-attention heads of half the usual
width; beside each runs a span-based dynamic convolution head: a SeparableConv1D of the input
(depthwise over conv_kernel_size tokens, then pointwise) times the query gives, through
conv_kernel_layer and a softmax, a conv_kernel_size kernel per token and head, which weighs the
conv_out_layer values of the tokens around it (zeros past either end). The attention heads'
outputs, then the convolution heads', make the hidden width. With num_groups > 1 the
feed-forward layers are grouped linears: the input split in num_groups slices, each with its
own [in / groups, out / groups] weight."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.components.conv import Conv1d
from converter.config.encoder import EncoderConfig
from converter.config.reader import ConfigReader
from converter.errors import ConfigError
from converter.models.electra import ElectraBody, ElectraModel
from converter.models.encoder import BertAttention, BertEncoder, BertLayer
from converter.models.roberta import ClassificationHead, TiedRules
from converter.registry import Family


def mixed_heads(cfg: EncoderConfig) -> int:
    """The attention heads (and as many convolution heads) a layer has."""
    return max(cfg.num_attention_heads // cfg.extra["head_ratio"], 1)


class SeparableConv1D(nn.Module):
    """Depthwise conv over the tokens (zero-padded to keep their count), then pointwise, plus
    `bias` (stored [out, 1]); [batch, sequence, in] -> [batch, sequence, out]."""

    def __init__(self, size: int, out: int, kernel: int, dtype: ir.DataType):
        super().__init__()
        pad = kernel // 2
        self.depthwise = Conv1d(size, size, kernel, dtype, padding=pad, groups=size, bias=False)
        self.pointwise = Conv1d(size, out, 1, dtype, bias=False)
        self.bias = nn.Parameter([out, 1], dtype)

    def forward(self, op, x):
        y = self.pointwise(op, self.depthwise(op, op.Transpose(x, perm=[0, 2, 1])))
        return op.Transpose(op.Add(y, self.bias), perm=[0, 2, 1])


class ConvBertSelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, kernel = cfg.hidden_size, cfg.extra["conv_kernel_size"]
        self.heads = mixed_heads(cfg)
        width = size // 2  # all attention heads together (and all convolution heads)
        self.head_size = width // self.heads
        self.query = Linear(size, width, True, dtype)
        self.key = Linear(size, width, True, dtype)
        self.value = Linear(size, width, True, dtype)
        self.key_conv_attn_layer = SeparableConv1D(size, width, kernel, dtype)
        self.conv_kernel_layer = Linear(width, self.heads * kernel, True, dtype)
        self.conv_out_layer = Linear(size, width, True, dtype)
        self.kernel_size, self.width = kernel, width

    def forward(self, op, x, kernel, bias=None):
        q = self.query(op, x)
        attended = kernel(
            op, q, self.key(op, x), self.value(op, x), self.heads, self.head_size**-0.5
        )
        return op.Concat(attended, self.dynamic_convolution(op, x, q), axis=-1)

    def dynamic_convolution(self, op, x, q):
        k, heads = self.kernel_size, self.heads
        weights = self.conv_kernel_layer(op, op.Mul(self.key_conv_attn_layer(op, x), q))
        # [batch, sequence, heads, 1, k]: one softmaxed kernel per token and head
        weights = op.Softmax(op.Reshape(weights, [0, 0, heads, 1, k]), axis=-1)
        values = self.conv_out_layer(op, x)
        half = (k - 1) // 2
        padded = op.Pad(values, [0, half, 0, 0, half, 0])
        length = op.Shape(x, start=1, end=2)
        # [batch, sequence, width, k]: token t's window, tokens t - half .. t + half
        windows = op.Concat(
            *[op.Unsqueeze(op.Slice(padded, [j], op.Add(length, j), [1]), [-1]) for j in range(k)],
            axis=-1,
        )
        windows = op.Reshape(windows, [0, 0, heads, self.head_size, k])
        mixed = op.MatMul(weights, op.Transpose(windows, perm=[0, 1, 2, 4, 3]))
        return op.Reshape(mixed, [0, 0, self.width])


class ConvBertAttention(BertAttention):
    self_attention_cls = ConvBertSelfAttention


class GroupedLinear(nn.Module):
    """`weight` [groups, in / groups, out / groups]: slice g of the input through weight[g],
    the outputs side by side, plus `bias` [out]."""

    def __init__(self, in_size: int, out_size: int, groups: int, dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter([groups, in_size // groups, out_size // groups], dtype)
        self.bias = nn.Parameter([out_size], dtype)
        self.groups, self.in_size, self.out_size = groups, in_size, out_size

    def forward(self, op, x):
        sliced = op.Reshape(x, [0, 0, self.groups, 1, self.in_size // self.groups])
        y = op.MatMul(sliced, self.weight)
        return op.Add(op.Reshape(y, [0, 0, self.out_size]), self.bias)


def feed_forward_linear(in_size: int, out_size: int, cfg: EncoderConfig, dtype: ir.DataType):
    groups = cfg.extra["num_groups"]
    if groups == 1:
        return Linear(in_size, out_size, True, dtype)
    return GroupedLinear(in_size, out_size, groups, dtype)


class ConvBertLayer(BertLayer):
    attention_cls = ConvBertAttention

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        size, inner = cfg.hidden_size, cfg.intermediate_size
        self.intermediate.dense = feed_forward_linear(size, inner, cfg, dtype)
        self.output.dense = feed_forward_linear(inner, size, cfg, dtype)


class ConvBertEncoder(BertEncoder):
    layer_cls = ConvBertLayer


class ConvBertBody(ElectraBody):
    encoder_cls = ConvBertEncoder


class ConvBertModel(ElectraModel):
    body_cls = ConvBertBody
    body_name = "convbert"

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "text-classification":
            # ConvBERT's classifier applies hidden_act, where ELECTRA's is gelu
            self.classifier = ClassificationHead(cfg, dtype, cfg.activation)
        else:
            super().make_head(cfg, dtype, task, tensors)


class ConvBertRules(TiedRules):
    def read_extra(self, r: ConfigReader) -> dict:
        kernel = r.int("conv_kernel_size", default=9)
        if kernel % 2 == 0:
            r.refuse("conv_kernel_size", "an even span does not keep the token count")
        return {
            **super().read_extra(r),
            "head_ratio": r.int("head_ratio", default=2),
            "conv_kernel_size": kernel,
            "num_groups": r.int("num_groups", default=1),
        }

    def read(self, r: ConfigReader) -> EncoderConfig:
        cfg = super().read(r)
        if r.bool("add_cross_attention", False):
            r.refuse("add_cross_attention", "ConvBERT converts as an encoder")
        heads = mixed_heads(cfg)
        if cfg.hidden_size % (2 * heads):
            raise ConfigError(
                f"'hidden_size' = {cfg.hidden_size} does not split into {heads} attention and "
                f"{heads} convolution heads of one width"
            )
        groups = cfg.extra["num_groups"]
        if cfg.hidden_size % groups or cfg.intermediate_size % groups:
            raise ConfigError(
                f"'num_groups' = {groups} does not divide hidden_size and intermediate_size"
            )
        return cfg


FAMILIES = [
    Family(
        "convbert",
        ConvBertModel,
        "mixed attention: reduced self-attention heads beside span-based dynamic convolution "
        "heads; grouped feed-forward linears; ELECTRA's embeddings projection and heads",
        ("YituTech/conv-bert-base", "YituTech/conv-bert-small"),
        rules=ConvBertRules(),
        task="feature-extraction",
        category="encoder",
        # old buffers, and a tied copy of the word table that transformers replaces by it
        unused=(
            r"(convbert\.)?embeddings\.(position_ids|token_type_ids)",
            r"generator_lm_head\.weight",
        ),
        prefix="convbert.",
    ),
]

"""ImageGPT: GPT-2's blocks (fused Conv1D `c_attn`, learned positions `wpe`) over the colour-cluster
token ids its image processor makes of an image (input_ids: the graph reads no pixels), with
a norm of its own: x / sqrt(mean(x²) + eps) * weight, no mean subtracted and no bias (RMSNorm).
Attention is causal whatever the config says, over the padding mask. ImageGPTForImageClassification
averages the hidden states of every position, padded or not (as transformers does), into a
bias-free `score`. ImageGPTForCausalImageModeling (generation over vocab_size - 1 colour tokens)
is not converted: the type lies outside transformers' causal-LM mapping, which the
text-generation scope counts, and a model_type holds one family."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Conv1D, Linear, RMSNorm
from converter.components.encoder_attention import encoder_attention
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import MAX_DIM, ConfigReader
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertEncoderModel, Table
from converter.models.gpt2 import GPT2MLP
from converter.registry import Family
from converter.tasks.encoding import BATCH, SEQUENCE, TextInputs


def _norm(cfg: EncoderConfig, dtype: ir.DataType) -> RMSNorm:
    return RMSNorm(cfg.hidden_size, cfg.norm_eps, dtype)


class ImageGPTAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig, index: int, dtype: ir.DataType):
        super().__init__()
        size = cfg.hidden_size
        self.c_attn = Conv1D(size, 3 * size, dtype)
        self.c_proj = Conv1D(size, size, dtype)
        self.heads = cfg.num_attention_heads
        scale = cfg.head_dim**-0.5 if cfg.extra["scale_attn_weights"] else 1.0
        self.scale = scale / (index + 1) if cfg.extra["scale_by_inverse_layer"] else scale

    def forward(self, op, x, kernel):
        q, k, v = op.Split(self.c_attn(op, x), axis=-1, num_outputs=3, _outputs=3)
        return self.c_proj(op, kernel(op, q, k, v, self.heads, self.scale))


class ImageGPTBlock(nn.Module):
    def __init__(self, cfg: EncoderConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.ln_1 = _norm(cfg, dtype)
        self.attn = ImageGPTAttention(cfg, index, dtype)
        self.ln_2 = _norm(cfg, dtype)
        self.mlp = GPT2MLP(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # ln_1 reads a sum in every block (the first one's is wte + wpe), and ln_2
        return {
            "skip_norms": 2 if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }

    def forward(self, op, x, kernel):
        x = op.Add(x, self.attn(op, self.ln_1(op, x), kernel))
        return op.Add(x, self.mlp(op, self.ln_2(op, x)))


class ImageGPTBody(nn.Module):
    """`wte`, `wpe`, the blocks `h`, the final norm `ln_f`."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__()
        self.wte = Table(cfg.vocab_size, cfg.hidden_size, dtype)
        self.wpe = Table(cfg.max_position_embeddings, cfg.hidden_size, dtype)
        self.h = nn.ModuleList([ImageGPTBlock(cfg, i, dtype) for i in range(cfg.num_hidden_layers)])
        self.ln_f = _norm(cfg, dtype)
        self.ep, self.dtype = ep, dtype

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 1 if plan.has(SKIP_NORM) else 0}  # ln_f reads a sum

    def forward(self, op, inputs: TextInputs):
        ids = inputs.input_ids
        kernel = encoder_attention(op, self.ep, inputs.attention_mask, self.dtype, causal=True)
        length = op.Squeeze(op.Shape(ids, start=1, end=2), [0])
        positions = op.Expand(op.Unsqueeze(op.Range(0, length, 1), [0]), op.Shape(ids))
        x = op.Add(self.wte(op, ids), self.wpe(op, positions))
        for block in self.h:
            x = block(op, x, kernel)
        return self.ln_f(op, x), None


class ImageGPTModel(BertEncoderModel):
    body_cls = ImageGPTBody
    body_name = "transformer"
    heads = ("feature-extraction", "image-classification")
    modality = "text"  # token ids in: the text tasks' inputs

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        return False

    def make_head(self, cfg: EncoderConfig, dtype, task: str, tensors) -> None:
        if task == "image-classification":
            self.score = Linear(cfg.hidden_size, cfg.num_labels, False, dtype)

    def forward(self, op, inputs: TextInputs) -> dict:
        hidden, _ = self.body(op, inputs)
        cfg = self.cfg
        if self.task == "feature-extraction":
            return {"last_hidden_state": (hidden, [BATCH, SEQUENCE, cfg.hidden_size])}
        logits = self.score(op, op.ReduceMean(hidden, [1], keepdims=0))
        return {"logits": (logits, [BATCH, cfg.num_labels])}


class ImageGPTRules(EncoderRules):
    def __init__(self) -> None:
        super().__init__(
            aliases={
                "n_embd": "hidden_size",
                "n_head": "num_attention_heads",
                "n_layer": "num_hidden_layers",
                "n_positions": "max_position_embeddings",
                "activation_function": "hidden_act",
            },
            token_types=False,
        )

    def read(self, r: ConfigReader) -> EncoderConfig:
        # n_inner unset: four times the width
        width = r.int("n_embd", "hidden_size")
        r.raw["intermediate_size"] = r.int("n_inner", default=4 * width, hi=MAX_DIM * 4)
        # is_decoder only picks transformers' mask builder: the attention is causal either way
        r.raw["is_decoder"] = False
        return super().read(r)

    def read_extra(self, r: ConfigReader) -> dict:
        if r.bool("add_cross_attention", False):
            r.refuse("add_cross_attention", "an image encoder has no encoder states to attend to")
        # reorder_and_upcast_attn only changes the precision of a half-precision softmax
        return {
            "scale_attn_weights": r.bool("scale_attn_weights", True),
            "scale_by_inverse_layer": r.bool("scale_attn_by_inverse_layer_idx", False),
        }


FAMILIES = [
    Family(
        "imagegpt",
        ImageGPTModel,
        "GPT-2's causal blocks over colour-cluster token ids (input_ids), RMS norms without bias; "
        "the classifier averages every position",
        ("openai/imagegpt-small",),
        rules=ImageGPTRules(),
        task="feature-extraction",
        category="vision",
        prefix="transformer.",
        # the causal-mask buffers older checkpoints store, and the Hub checkpoints' causal
        # image-modeling head, which no task here reads
        unused=(r"(transformer\.)?h\.\d+\.attn\.(masked_)?bias", r"lm_head\.weight"),
    ),
]

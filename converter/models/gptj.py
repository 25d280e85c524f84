"""GPT-J and CodeGen: attention and MLP in parallel off one LayerNorm (`ln_1`), rotary on the
first `rotary_dim` dims of each head with interleaved pairs, a biased `lm_head`.

CodeGen is GPT-J with one `qkv_proj` whose rows come in 4 groups (its model-parallel layout),
each holding q, v and k for a quarter of the hidden size.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, Linear, PlainMLP, make_norm
from converter.components.cache import LayerCache
from converter.config import ConfigReader, ConfigRules, Rope
from converter.errors import ConfigError
from converter.execution_providers import GQA, PACKED_QKV, SKIP_NORM, ExecutionProvider
from converter.models.decoder import (
    AttentionKernelChoice,
    attention_spec,
    layer_caches,
    project_logits,
    tied_head_fusions,
)
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs

_CODEGEN_GROUPS = 4  # transformers' CodeGenAttention.mp_num


class GPTJAttention(Attention):
    out_proj_name = "out_proj"


class CodeGenAttention(GPTJAttention):
    def _project(self, op, x):
        groups = op.Reshape(self.qkv_proj(op, x), [0, 0, _CODEGEN_GROUPS, -1])
        q, v, k = op.Split(groups, axis=-1, num_outputs=3, _outputs=3)
        return [op.Reshape(t, [0, 0, -1]) for t in (q, k, v)]


class GPTJMLP(PlainMLP):
    in_name, out_name = "fc_in", "fc_out"


class GPTJBlock(nn.Module):
    attention_cls = GPTJAttention

    def __init__(self, cfg, index: int, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.index = index
        self.ln_1 = make_norm(cfg, cfg.hidden_size, dtype)
        spec = attention_spec(cfg, index)
        self.attn = self.attention_cls(cfg, dtype, spec, packed=ep.has(PACKED_QKV))
        self.mlp = GPTJMLP(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # ln_1 reads the previous block's sum (the first one reads the embeddings)
        return {"skip_norms": int(self.index > 0)} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.ln_1(op, x)
        a, key, value = self.attn(op, h, kernel, past_key, past_value)
        return op.Add(op.Add(x, a), self.mlp(op, h)), key, value


class CodeGenBlock(GPTJBlock):
    attention_cls = CodeGenAttention


class GPTJBody(nn.Module):
    block_cls = GPTJBlock

    def __init__(self, cfg, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.kernel = AttentionKernelChoice(cfg, ep, dtype)
        self.wte = Embedding(cfg.vocab_size, cfg.hidden_size, dtype)
        self.h = nn.ModuleList(
            [self.block_cls(cfg, i, dtype, ep) for i in range(cfg.num_hidden_layers)]
        )
        self.ln_f = make_norm(cfg, cfg.hidden_size, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        counts = {"skip_norms": 1} if plan.has(SKIP_NORM) else {}  # ln_f
        if plan.has(GQA):
            counts[GQA] = len(self.h) if self.kernel.gqa else 0
        return counts

    def forward(self, op, inputs: DecoderInputs):
        x = self.wte(op, inputs.tokens, inputs.embedded)
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        presents = []
        for block, (past_key, past_value) in zip(self.h, inputs.past, strict=True):
            x, key, value = block(op, x, kernel, past_key, past_value)
            presents.append((key, value))
        return self.ln_f(op, x), presents


class CodeGenBody(GPTJBody):
    block_cls = CodeGenBlock


class TiedHeadBias(nn.Module):
    """The `lm_head.bias` a head keeps when its weight is tied to the embedding table."""

    def __init__(self, size: int, dtype: ir.DataType):
        super().__init__()
        self.bias = nn.Parameter([size], dtype)

    def forward(self, op, logits):
        return op.Add(logits, self.bias)


class GPTJLM(nn.Module):
    """`transformer` (the body) and a biased `lm_head` (its weight may be tied to `wte`)."""

    body_cls = GPTJBody

    def __init__(self, cfg, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.cfg = cfg
        self.transformer = self.body_cls(cfg, dtype, ep)
        if cfg.tie_word_embeddings:
            self.lm_head = TiedHeadBias(cfg.vocab_size, dtype)
        else:
            self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, True, dtype, head=True)

    def embedding_table(self):
        return self.transformer.wte.weight

    def caches(self) -> list[LayerCache]:
        return layer_caches(self.cfg)

    def fallbacks(self) -> list[str]:
        return list(self.transformer.kernel.fallbacks)

    def expected_fusions(self, plan) -> dict[str, int]:
        return tied_head_fusions(self.cfg, plan)

    def forward(self, op, inputs: DecoderInputs):
        hidden, presents = self.transformer(op, inputs)
        logits = project_logits(op, self, self.cfg, hidden)
        if self.cfg.tie_word_embeddings:
            logits = self.lm_head(op, logits)
        return logits, presents


class CodeGenLM(GPTJLM):
    body_cls = CodeGenBody


class GPTJRules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        """Base 10000 over the first `rotary_dim` dims of each head, no scaling."""
        dim = r.int("rotary_dim")
        if dim > head_dim or dim % 2:
            raise ConfigError(
                f"'rotary_dim' = {dim} must be even and at most the head size {head_dim}"
            )
        max_positions = r.int("n_positions", "max_position_embeddings")
        return Rope("default", 10000.0, dim, max_positions, interleaved=True)


_TRAITS = {"norm_type": "layer", "layout": "parallel", "mlp_bias": True}
FAMILIES = [
    Family(
        "gptj",
        GPTJLM,
        "parallel attention+MLP off one LayerNorm, interleaved partial rotary, biased lm_head",
        ("EleutherAI/gpt-j-6b",),
        rules=GPTJRules(**_TRAITS),
        unused=(r"transformer\.h\.\d+\.attn\.(masked_)?bias",),
    ),
    Family(
        "codegen",
        CodeGenLM,
        "GPT-J with one qkv_proj in 4 model-parallel groups of q, v, k",
        ("Salesforce/codegen-350M-mono",),
        rules=GPTJRules(**_TRAITS, fused_qkv=True),
        unused=(r"transformer\.h\.\d+\.attn\.causal_mask",),
    ),
]

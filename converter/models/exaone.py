"""EXAONE 3/3.5: Llama as transformers runs it, under the checkpoints' GPT-2-style names
(`transformer.wte`, `transformer.h.N.attn.attention.*_proj`, `ln_1`/`ln_2`,
`mlp.c_fc_0`/`c_fc_1`/`c_proj`, `transformer.ln_f`) and config keys (`num_layers`,
`layer_norm_epsilon`, `activation_function`)."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, GatedMLP, Linear, make_norm
from converter.components.cache import LayerCache
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.execution_providers import (
    GQA,
    PACKED_GATE_UP,
    PACKED_QKV,
    SKIP_NORM,
    ExecutionProvider,
)
from converter.models.decoder import (
    AttentionKernelChoice,
    attention_spec,
    layer_caches,
    project_logits,
    tied_head_fusions,
)
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs


class ExaoneSelfAttention(Attention):
    out_proj_name = "out_proj"


class ExaoneAttention(nn.Module):
    """`attn`, whose `attention` holds the projections."""

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, packed: bool):
        super().__init__()
        self.attention = ExaoneSelfAttention(cfg, dtype, attention_spec(cfg, index), packed)

    def forward(self, op, x, kernel, past_key, past_value):
        return self.attention(op, x, kernel, past_key, past_value)


class ExaoneMLP(GatedMLP):
    gate_name, up_name, down_name = "c_fc_0", "c_fc_1", "c_proj"


class ExaoneBlock(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.index = index
        self.ln_1 = make_norm(cfg, cfg.hidden_size, dtype)
        self.attn = ExaoneAttention(cfg, index, dtype, ep.has(PACKED_QKV))
        self.ln_2 = make_norm(cfg, cfg.hidden_size, dtype)
        self.mlp = ExaoneMLP(cfg, dtype, packed=ep.has(PACKED_GATE_UP))

    def expected_fusions(self, plan) -> dict[str, int]:
        # both norms read a residual sum, but the first block's ln_1 (the embeddings)
        return {"skip_norms": 1 + int(self.index > 0)} if plan.has(SKIP_NORM) else {}

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.attn(op, self.ln_1(op, x), kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.ln_2(op, x))), key, value


class ExaoneBody(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.kernel = AttentionKernelChoice(cfg, ep, dtype)
        self.wte = Embedding(cfg.vocab_size, cfg.hidden_size, dtype)
        self.h = nn.ModuleList(
            [ExaoneBlock(cfg, i, dtype, ep) for i in range(cfg.num_hidden_layers)]
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


class ExaoneLM(nn.Module):
    """`transformer` (the body) and `lm_head`, tied to `transformer.wte` when the config says so."""

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.cfg = cfg
        self.transformer = ExaoneBody(cfg, dtype, ep)
        if not cfg.tie_word_embeddings:
            self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, False, dtype, head=True)

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
        return project_logits(op, self, self.cfg, hidden), presents


class ExaoneRules(ConfigRules):
    def sliding_window(self, r: ConfigReader) -> int | None:
        return None  # transformers runs EXAONE as Llama: full attention


_HUB_SPELLINGS = {
    "num_layers": "num_hidden_layers",
    "layer_norm_epsilon": "rms_norm_eps",
    "activation_function": "hidden_act",
}
FAMILIES = [
    Family(
        "exaone",
        ExaoneLM,
        "Llama under GPT-2-style tensor names and config keys",
        ("LGAI-EXAONE/EXAONE-3.5-2.4B-Instruct",),
        rules=ExaoneRules(aliases=_HUB_SPELLINGS),
    ),
]

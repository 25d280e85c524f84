"""HRM-text: two weight-shared Llama stacks (L and H) run in cycles. Per high cycle the L stack
runs `L_cycles` times on (its state + the H state), then the H stack once on (H state + L
state); each run of a layer keeps its own KV cache. Norms have no weights, attention outputs
are gated (a sigmoid gate projected with q, k, v in one `gqkv_proj`), embeddings scaled.
transformers' prefix-LM block needs `token_type_ids`, which the text-generation task does not
feed: attention is causal, as transformers' without them."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Embedding, GatedMLP, Linear, make_norm
from converter.config import FULL, ArchitectureConfig, ConfigReader, ConfigRules
from converter.execution_providers import GQA, SKIP_NORM
from converter.models.decoder import (
    AttentionKernelChoice,
    DecoderLM,
    attention_spec,
    declared_fusions,
)
from converter.registry import Family
from converter.tasks.text_generation import DecoderInputs


@dataclass(frozen=True)
class HrmTextConfig(ArchitectureConfig):
    cycles: tuple[int, int] = (2, 3)  # (H_cycles, L_cycles)
    per_stack: int = 1  # layers in each of the L and H stacks


class HrmAttention(nn.Module):
    """The Hub's `attn`: one `gqkv_proj` for the gate, q, k and v (in that order), `o_proj`."""

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.spec = attention_spec(cfg, index)
        q_size = cfg.num_attention_heads * cfg.head_dim
        self.sizes = [q_size] * 4  # multi-head: k and v as wide as q
        self.gqkv_proj = Linear(cfg.hidden_size, sum(self.sizes), False, dtype)
        self.o_proj = Linear(q_size, cfg.hidden_size, False, dtype)

    def forward(self, op, x, kernel, past_key, past_value):
        gate, q, k, v = op.Split(self.gqkv_proj(op, x), self.sizes, axis=-1, _outputs=4)
        y, key, value = kernel(op, q, k, v, past_key, past_value, self.spec)
        return self.o_proj(op, op.Mul(op.Sigmoid(gate), y)), key, value


class HrmLayer(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType):
        super().__init__()
        self.input_layernorm = make_norm(cfg, cfg.hidden_size, dtype)
        self.attn = HrmAttention(cfg, index, dtype)
        self.post_attention_layernorm = make_norm(cfg, cfg.hidden_size, dtype)
        self.mlp = GatedMLP(cfg, dtype)

    def forward(self, op, x, kernel, past_key, past_value):
        a, key, value = self.attn(op, self.input_layernorm(op, x), kernel, past_key, past_value)
        x = op.Add(x, a)
        return op.Add(x, self.mlp(op, self.post_attention_layernorm(op, x))), key, value


class HrmStack(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, per_stack: int, dtype: ir.DataType):
        super().__init__()
        self.layers = nn.ModuleList([HrmLayer(cfg, i, dtype) for i in range(per_stack)])
        self.final_norm = make_norm(cfg, cfg.hidden_size, dtype)

    def forward(self, op, x, kernel, past, presents: list):
        for layer in self.layers:
            x, key, value = layer(op, x, kernel, *past[len(presents)])
            presents.append((key, value))
        return self.final_norm(op, x)


class HrmBody(nn.Module):
    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep):
        super().__init__()
        self.cycles = cfg.cycles
        self.kernel = AttentionKernelChoice(cfg, ep, dtype)
        scale = cfg.embedding_multiplier
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.hidden_size, dtype, scale)
        self.z_L_init = nn.Parameter([cfg.hidden_size], dtype)
        self.L_module = HrmStack(cfg, cfg.per_stack, dtype)
        self.H_module = HrmStack(cfg, cfg.per_stack, dtype)

    @property
    def embedding(self) -> Embedding:
        return self.embed_tokens

    def expected_fusions(self, plan) -> dict[str, int]:
        high, low = self.cycles
        runs = high * (low + 1)
        per_run = len(self.L_module.layers)
        counts = {}
        if plan.has(SKIP_NORM):  # every norm reads a sum, the first one the expanded z_L_init's
            counts["skip_norms"] = runs * (2 * per_run + 1)
        if plan.has(GQA):
            counts[GQA] = runs * per_run if self.kernel.gqa else 0
        # each stack's modules declare one run; the others add theirs
        extra_runs = {self.L_module: high * low - 1, self.H_module: high - 1}
        if plan.matmul_fusion is not None:
            counts[plan.matmul_fusion] = sum(
                n * declared_fusions(m, plan, plan.matmul_fusion) for m, n in extra_runs.items()
            )
        return counts

    def forward(self, op, inputs: DecoderInputs):
        high_state = self.embed_tokens(op, inputs.tokens, inputs.embedded)
        kernel = self.kernel.make(op, inputs.tokens, inputs.attention_mask, inputs.position_ids)
        low_state = op.Expand(self.z_L_init, op.Shape(high_state))
        high, low = self.cycles
        presents: list = []
        for _ in range(high):
            for _ in range(low):
                x = op.Add(low_state, high_state)
                low_state = self.L_module(op, x, kernel, inputs.past, presents)
            x = op.Add(high_state, low_state)
            high_state = self.H_module(op, x, kernel, inputs.past, presents)
        return high_state, presents


class HrmTextLM(DecoderLM):
    body_cls = HrmBody


class HrmTextRules(ConfigRules):
    def read(self, r: ConfigReader) -> HrmTextConfig:
        for key in ("attention_bias", "mlp_bias"):
            if r.bool(key, default=False):
                r.refuse(key, "HRM checkpoints fuse their gate/q/k/v and gate/up weights unbiased")
        cfg = super().read(r)
        cycles = (r.int("H_cycles", default=2), r.int("L_cycles", default=3))
        # config.json's num_hidden_layers counts every run of every layer (one cache each);
        # without num_layers_per_stack it is the per-stack count (transformers' legacy form)
        per_stack = r.int("num_layers_per_stack", "num_hidden_layers")
        runs = per_stack * cycles[0] * (cycles[1] + 1)
        if r.has("num_layers_per_stack") and cfg.num_hidden_layers < runs:
            r.refuse(
                "num_hidden_layers",
                f"it must count every run of every layer: {per_stack} per stack x "
                f"{cycles[0]} H_cycles x ({cycles[1]} L_cycles + 1) = {runs}",
            )
        if "embedding_scale" in r.raw:
            scale = r.float("embedding_scale")
        else:
            scale = 1.0 / r.float("initializer_range", default=0.02)
        fields = vars(cfg) | {
            "num_hidden_layers": runs,
            "num_key_value_heads": cfg.num_attention_heads,
            "layer_types": (FULL,) * runs,
            "embedding_multiplier": scale,
        }
        return HrmTextConfig(**fields, cycles=cycles, per_stack=per_stack)


FAMILIES = [
    Family(
        "hrm_text",
        HrmTextLM,
        "weight-shared L/H stacks run in cycles (a cache per run), gated attention, "
        "weightless RMSNorm; causal (no token_type_ids prefix block)",
        rules=HrmTextRules(norm_affine=False, fused_gate_up=True),
    ),
]

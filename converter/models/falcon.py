"""Falcon: a fused `query_key_value` in one of three layouts (multi-head, multi-query, or the
new decoder architecture's kv groups), rotary or ALiBi positions, attention and MLP in parallel
off one or two LayerNorms, or one after the other."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import MegatronMLP, make_norm
from converter.config import ArchitectureConfig, ConfigReader, ConfigRules
from converter.config.alibi import Alibi, geometric_slopes
from converter.execution_providers import SKIP_NORM
from converter.models.bloom import GroupedQKVAttention
from converter.models.decoder import DecoderBody, DecoderLM
from converter.registry import Family

SEQUENTIAL, PARALLEL, PARALLEL_TWO_NORMS = "sequential", "parallel", "parallel_two_norms"
_NORMS = {
    SEQUENTIAL: ("input_layernorm", "post_attention_layernorm"),
    PARALLEL: ("input_layernorm",),
    PARALLEL_TWO_NORMS: ("ln_attn", "ln_mlp"),
}


@dataclass(frozen=True)
class FalconConfig(ArchitectureConfig):
    block: str = PARALLEL  # one of _NORMS


class FalconBlock(nn.Module):
    def __init__(self, cfg: FalconConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.index, self.block = index, cfg.block
        for name in _NORMS[cfg.block]:
            setattr(self, name, make_norm(cfg, cfg.hidden_size, dtype))
        groups = cfg.num_key_value_heads
        self.self_attention = GroupedQKVAttention(cfg, index, dtype, groups)
        self.mlp = MegatronMLP(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # the norms of every block but the first read the previous block's sum (two parallel
        # norms share one fused node); a sequential block's second norm reads its own
        if not plan.has(SKIP_NORM):
            return {}
        return {"skip_norms": int(self.index > 0) + int(self.block == SEQUENTIAL)}

    def forward(self, op, x, kernel, past_key, past_value):
        def attend(h):
            return self.self_attention(op, h, kernel, past_key, past_value)

        if self.block == SEQUENTIAL:
            a, key, value = attend(self.input_layernorm(op, x))
            x = op.Add(x, a)
            return op.Add(x, self.mlp(op, self.post_attention_layernorm(op, x))), key, value
        if self.block == PARALLEL:
            h = self.input_layernorm(op, x)
            a, key, value = attend(h)
            m = self.mlp(op, h)
        else:
            a, key, value = attend(self.ln_attn(op, x))
            m = self.mlp(op, self.ln_mlp(op, x))
        return op.Add(x, op.Add(m, a)), key, value


class FalconBody(DecoderBody):
    layer_cls = FalconBlock
    embedding_name, layers_name, final_norm_name = "word_embeddings", "h", "ln_f"


class FalconLM(DecoderLM):
    body_cls = FalconBody
    body_name = "transformer"


class FalconRules(ConfigRules):
    def activation(self, r: ConfigReader) -> str:
        return r.str("activation", default="gelu")

    def rope(self, r: ConfigReader, head_dim: int):
        return None if r.bool("alibi", default=False) else super().rope(r, head_dim)

    def read(self, r: ConfigReader) -> FalconConfig:
        cfg = super().read(r)
        heads, d = cfg.num_attention_heads, cfg.head_dim
        new_layout = r.bool("new_decoder_architecture", default=False)
        parallel = r.bool("parallel_attn", default=True)
        norms = r.raw.get("num_ln_in_parallel_attn")
        if norms not in (None, 1, 2):
            r.refuse("num_ln_in_parallel_attn", "Falcon has one or two norms per block")
        if new_layout and not parallel:
            r.refuse("parallel_attn", "the new decoder architecture runs attention in parallel")
        if not new_layout and norms == 2:
            r.refuse("num_ln_in_parallel_attn", "two norms need the new decoder architecture")
        if not parallel:
            block = SEQUENTIAL
        else:
            block = PARALLEL_TWO_NORMS if new_layout and norms in (None, 2) else PARALLEL
        if new_layout:
            kv_heads = cfg.num_key_value_heads
        else:
            kv_heads = 1 if r.bool("multi_query", default=True) else heads
        bias = r.bool("bias", default=False)
        fields = vars(cfg) | {
            "num_key_value_heads": kv_heads,
            "intermediate_size": r.int("ffn_hidden_size", default=4 * cfg.hidden_size),
            "qkv_bias": bias,
            "o_bias": bias,
            "mlp_bias": bias,
        }
        if r.bool("alibi", default=False):
            # built in bfloat16 and divided by sqrt(head_dim), as Falcon-RW was trained
            fields["alibi"] = Alibi(geometric_slopes(heads), scale=d**-0.5, bfloat16=True)
        return FalconConfig(**fields, block=block)


FAMILIES = [
    Family(
        "falcon",
        FalconLM,
        "multi-query or kv-grouped fused query_key_value, rotary or ALiBi, parallel attention",
        ("tiiuae/falcon-7b", "tiiuae/falcon-rw-1b"),
        rules=FalconRules(norm_type="layer"),
        prefix="transformer.",
        # transformers 5.24's eager Falcon adds the ALiBi bias twice (in the mask and in the
        # scores); sdpa, its default, adds it once, as the model was trained
        reference_attention="sdpa",
    ),
]

"""GPT-J and CodeGen: attention and MLP in parallel off one LayerNorm (`ln_1`), rotary on the
first `rotary_dim` dims of each head with interleaved pairs, a biased `lm_head`.

CodeGen is GPT-J with one `qkv_proj` whose rows come in 4 groups (its model-parallel layout),
each holding q, v and k for a quarter of the hidden size.
"""

from __future__ import annotations

from typing import ClassVar

from converter.components import Attention, PlainMLP
from converter.config import ConfigReader, ConfigRules, Rope
from converter.errors import ConfigError
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family

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


class GPTJBlock(DecoderLayer):
    attention_cls, mlp_cls = GPTJAttention, GPTJMLP
    attention_name = "attn"
    layout_norms: ClassVar = {"parallel": ("ln_1",)}


class CodeGenBlock(GPTJBlock):
    attention_cls = CodeGenAttention


class GPTJBody(DecoderBody):
    layer_cls = GPTJBlock
    embedding_name, layers_name, final_norm_name = "wte", "h", "ln_f"


class CodeGenBody(GPTJBody):
    layer_cls = CodeGenBlock


class GPTJLM(DecoderLM):
    """`transformer` (the body) and a biased `lm_head` (its weight may be tied to `wte`)."""

    body_cls = GPTJBody
    body_name = "transformer"
    head_bias = True


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

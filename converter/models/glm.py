"""GLM (GLM-4-9B) and GLM-4 (0414): Llama with rotary on half of each head in interleaved pairs,
q/k/v biases without an output bias, one fused `gate_up_proj`; GLM-4 also normalizes the
attention and MLP outputs before each residual sum (`post_self_attn_layernorm`,
`post_mlp_layernorm`)."""

import dataclasses

from converter.components import make_norm
from converter.config import ConfigReader, ConfigRules, Rope
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class Glm4Layer(DecoderLayer):
    """input_layernorm and post_attention_layernorm (before the MLP) as in Llama, plus norms on
    the attention and MLP outputs."""

    def __init__(self, cfg, index: int, dtype, ep):
        super().__init__(cfg, index, dtype, ep)
        self.post_self_attn_layernorm = make_norm(cfg, cfg.hidden_size, dtype)
        self.post_mlp_layernorm = make_norm(cfg, cfg.hidden_size, dtype)

    def forward(self, op, x, kernel, past_key, past_value):
        h = self.input_layernorm(op, x)
        a, key, value = self.self_attn(op, h, kernel, past_key, past_value)
        x = op.Add(x, self.post_self_attn_layernorm(op, a))
        m = self.mlp(op, self.post_attention_layernorm(op, x))
        return op.Add(x, self.post_mlp_layernorm(op, m)), key, value


class Glm4Body(DecoderBody):
    layer_cls = Glm4Layer


class Glm4LM(DecoderLM):
    body_cls = Glm4Body


class GlmRules(ConfigRules):
    def rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return dataclasses.replace(super().rope(r, head_dim), interleaved=True)


_GLM = {"fused_gate_up": True, "o_bias": False}
FAMILIES = [
    Family(
        "glm",
        DecoderLM,
        "interleaved partial rotary, q/k/v biases, fused gate_up_proj",
        ("THUDM/glm-4-9b-chat-hf",),
        rules=GlmRules(**_GLM),
    ),
    Family(
        "glm4",
        Glm4LM,
        "GLM with norms on the attention and MLP outputs",
        ("THUDM/GLM-4-9B-0414",),
        rules=GlmRules(**_GLM),
    ),
]

"""EXAONE 3/3.5: Llama as transformers runs it, under the checkpoints' GPT-2-style names
(`transformer.wte`, `transformer.h.N.attn.attention.*_proj`, `ln_1`/`ln_2`,
`mlp.c_fc_0`/`c_fc_1`/`c_proj`, `transformer.ln_f`) and config keys (`num_layers`,
`layer_norm_epsilon`, `activation_function`)."""

from __future__ import annotations

from typing import ClassVar

from converter.components import GatedMLP
from converter.config import ConfigReader, ConfigRules
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.gpt_neo import GPTNeoAttention
from converter.registry import Family


class ExaoneMLP(GatedMLP):
    gate_name, up_name, down_name = "c_fc_0", "c_fc_1", "c_proj"


class ExaoneBlock(DecoderLayer):
    attention_cls, mlp_cls = GPTNeoAttention, ExaoneMLP
    attention_name = "attn"
    layout_norms: ClassVar = {"pre": ("ln_1", "ln_2")}


class ExaoneBody(DecoderBody):
    layer_cls = ExaoneBlock
    embedding_name, layers_name, final_norm_name = "wte", "h", "ln_f"


class ExaoneLM(DecoderLM):
    body_cls = ExaoneBody
    body_name = "transformer"


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

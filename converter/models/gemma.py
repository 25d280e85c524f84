"""Gemma 1/2/3 (text): scaled embeddings, (1 + w) RMSNorm, GeGLU; Gemma 2 adds softcaps, pre and
post norms and alternating sliding windows; Gemma 3 q/k norms and a local rope base. VaultGemma
is Gemma 2 with the norms before attention and MLP only."""

from typing import ClassVar

from converter.config import FULL, SLIDING, ConfigReader, ConfigRules, Rope, parse_local_rope
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.registry import Family


class GemmaRules(ConfigRules):
    def activation(self, r: ConfigReader) -> str:
        name = super().activation(r)
        return "gelu_pytorch_tanh" if name == "gelu" else name  # legacy configs mean tanh


class Gemma2Rules(GemmaRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL if window is None or index % 2 else SLIDING  # sliding, full, sliding, ...


class Gemma3Rules(GemmaRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        pattern = r.int("sliding_window_pattern", default=6)
        return FULL if window is None or (index + 1) % pattern == 0 else SLIDING

    def local_rope(self, r: ConfigReader, head_dim: int) -> Rope | None:
        return parse_local_rope(r.raw, head_dim=head_dim)


class VaultGemmaLayer(DecoderLayer):
    layout_norms: ClassVar = {"pre": ("input_layernorm", "pre_feedforward_layernorm")}


class VaultGemmaBody(DecoderBody):
    layer_cls = VaultGemmaLayer


class VaultGemmaLM(DecoderLM):
    body_cls = VaultGemmaBody


_GEMMA = {"norm_offset": 1.0, "embed_scale_sqrt": True}
FAMILIES = [
    Family(
        "gemma",
        DecoderLM,
        "scaled embeddings, GeGLU, (1+w) RMSNorm",
        ("google/gemma-2b",),
        rules=GemmaRules(**_GEMMA),
    ),
    Family(
        "gemma2",
        DecoderLM,
        "attention/final logit softcaps, pre+post norms, alternating sliding window",
        ("google/gemma-2-2b-it",),
        rules=Gemma2Rules(**_GEMMA, layout="sandwich"),
    ),
    Family(
        "gemma3_text",
        DecoderLM,
        "q/k norms, local/global rope bases, 5:1 sliding window",
        ("google/gemma-3-1b-it",),
        rules=Gemma3Rules(**_GEMMA, layout="sandwich", qk_norm="head"),
    ),
    Family(
        "vaultgemma",
        VaultGemmaLM,
        "Gemma 2 with pre-norms only",
        ("google/vaultgemma-1b",),
        rules=Gemma2Rules(**_GEMMA),
    ),
]

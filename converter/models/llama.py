"""Llama and the families that are Llama with other numbers: the generic decoder as is."""

import dataclasses

from converter.config import FULL, SLIDING, ArchitectureConfig, ConfigReader, ConfigRules
from converter.models.decoder import DecoderLM
from converter.registry import Family


class IQuestCoderRules(ConfigRules):
    """Llama, as transformers runs it: the original code's q/k/v clipping and sliding windows
    are refused (transformers refuses them too) and any `sliding_window` left unread."""

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        if r.has("clip_qkv"):
            r.refuse("clip_qkv", "IQuest-Coder runs as Llama, which does not clip q/k/v")
        if r.bool("use_sliding_window", default=False):
            r.refuse("use_sliding_window", "IQuest-Coder runs as Llama, with full attention")
        return super().read(r)

    def sliding_window(self, r: ConfigReader) -> int | None:
        return None


class SeedOssRules(ConfigRules):
    """q/k/v biases per `attention_bias`, the output projection's per `attention_out_bias`."""

    def read(self, r: ConfigReader) -> ArchitectureConfig:
        cfg = super().read(r)
        return dataclasses.replace(cfg, o_bias=r.bool("attention_out_bias", default=False))


class MinistralRules(ConfigRules):
    def head_dim(self, r: ConfigReader, hidden: int, heads: int) -> int:
        return r.int("head_dim")  # transformers 5.24 cannot build Ministral without it


class CwmRules(ConfigRules):
    def layer_type(self, r: ConfigReader, index: int, window: int | None) -> str:
        return FULL if window is None or index % 4 == 0 else SLIDING  # full, 3 x sliding, ...


_NO_ATTENTION_BIAS = {"qkv_bias": False, "o_bias": False}
FAMILIES = [
    Family(
        "llama",
        DecoderLM,
        "RMSNorm, SwiGLU, GQA; rope default/linear/dynamic/llama3/yarn",
        ("meta-llama/Llama-3.2-1B", "HuggingFaceTB/SmolLM2-135M"),
    ),
    Family("mistral", DecoderLM, "sliding-window attention", ("mistralai/Mistral-7B-v0.1",)),
    Family(
        "granite",
        DecoderLM,
        "embedding/residual/attention/logit multipliers",
        ("ibm-granite/granite-3.1-2b-instruct",),
    ),
    Family(
        "internlm3",
        DecoderLM,
        "Llama; `qkv_bias` and `bias` spell the attention and MLP biases",
        ("internlm/internlm3-8b-instruct",),
        rules=ConfigRules(aliases={"qkv_bias": "attention_bias", "bias": "mlp_bias"}),
    ),
    Family(
        "iquestcoder",
        DecoderLM,
        "Llama",
        ("IQuestLab/IQuest-Coder-V1-40B-Instruct",),
        rules=IQuestCoderRules(),
    ),
    Family(
        "seed_oss",
        DecoderLM,
        "q/k/v biases, output projection bias of its own (`attention_out_bias`)",
        ("ByteDance-Seed/Seed-OSS-36B-Instruct",),
        rules=SeedOssRules(),
    ),
    Family(
        "ministral",
        DecoderLM,
        "sliding or full attention per layer (`layer_types`)",
        ("mistralai/Ministral-8B-Instruct-2410",),
        rules=MinistralRules(**_NO_ATTENTION_BIAS, mlp_bias=False),
    ),
    Family(
        "cwm",
        DecoderLM,
        "sliding windows but in every 4th layer (from the first)",
        ("facebook/cwm",),
        rules=CwmRules(**_NO_ATTENTION_BIAS),
    ),
]

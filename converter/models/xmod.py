"""X-MOD: RoBERTa whose every layer ends in a per-language bottleneck adapter (after the MLP's
residual sum, normed by the output LayerNorm or its own, with a residual of its own) before the
output LayerNorm. transformers picks the adapter per sample from lang_ids, defaulting to the
config's default_language; the tokenizer gives no lang_ids, so the graph runs the adapters of
default_language (the other languages' adapters are left unread). Convert a checkpoint once per
language by setting default_language in its config.json."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear, activation
from converter.config.encoder import EncoderConfig
from converter.errors import ConfigError
from converter.execution_providers import ENCODER_MHA, SKIP_NORM
from converter.models.encoder import BertBody, BertEncoder, BertLayer
from converter.models.roberta import RobertaModel, RobertaRules, roberta_unused
from converter.registry import Family


class XmodRules(RobertaRules):
    def read_extra(self, r) -> dict:
        if r.bool("pre_norm", False):
            r.refuse(
                "pre_norm",
                "X-MOD's pre-norm layout is not built (the released models are post-norm)",
            )
        languages = r.get("languages", default=["en_XX"])
        language = r.get("default_language")
        if language is None or language not in languages:
            raise ConfigError(
                f"'default_language' = {language!r} must name one of 'languages' {languages}: the "
                "graph takes no lang_ids and runs that language's adapters"
            )
        return {
            **super().read_extra(r),
            "language": language,
            "bottleneck": r.int("hidden_size") // r.int("adapter_reduction_factor", default=2),
            "adapter_layer_norm": r.bool("adapter_layer_norm", False),
            "reuse_layer_norm": r.bool("adapter_reuse_layer_norm", True),
            "ln_before_adapter": r.bool("ln_before_adapter", True),
        }


class XmodAdapter(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, bottleneck = cfg.hidden_size, cfg.extra["bottleneck"]
        self.dense1 = Linear(size, bottleneck, True, dtype)
        self.dense2 = Linear(bottleneck, size, True, dtype)
        self.act = cfg.activation

    def forward(self, op, x):
        return self.dense2(op, activation(op, self.act, self.dense1(op, x)))


class LanguageAdapters(nn.Module):
    """`adapter_modules`, holding the adapter of the one language the graph runs."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.language = cfg.extra["language"]
        setattr(self, self.language, XmodAdapter(cfg, dtype))

    def forward(self, op, x):
        return getattr(self, self.language)(op, x)


class XmodOutput(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        size, extra = cfg.hidden_size, cfg.extra
        self.dense = Linear(cfg.intermediate_size, size, True, dtype)
        self.LayerNorm = LayerNorm(size, cfg.norm_eps, dtype)
        own_norm = extra["adapter_layer_norm"]
        self.adapter_layer_norm = LayerNorm(size, cfg.norm_eps, dtype) if own_norm else None
        self.adapter_modules = LanguageAdapters(cfg, dtype)
        self.reuse_norm = not own_norm and extra["reuse_layer_norm"]
        self.ln_before_adapter = extra["ln_before_adapter"]

    @property
    def adapter_normed(self) -> bool:
        return self.adapter_layer_norm is not None or self.reuse_norm

    def forward(self, op, x, residual):
        h = op.Add(self.dense(op, x), residual)
        normed = h
        if self.adapter_layer_norm is not None:
            normed = self.adapter_layer_norm(op, h)
        elif self.reuse_norm:
            normed = self.LayerNorm(op, h)
        skip = normed if self.ln_before_adapter else h
        return self.LayerNorm(op, op.Add(self.adapter_modules(op, normed), skip))


class XmodLayer(BertLayer):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.output = XmodOutput(cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        # the attention's norm, the adapter's input norm (if any) and the output norm each read
        # a residual sum
        norms = 2 + int(self.output.adapter_normed)
        return {
            "skip_norms": norms if plan.has(SKIP_NORM) else 0,
            ENCODER_MHA: 1 if plan.has(ENCODER_MHA) else 0,
        }


class XmodEncoder(BertEncoder):
    layer_cls = XmodLayer


class XmodBody(BertBody):
    encoder_cls = XmodEncoder


class XmodModel(RobertaModel):
    body_cls = XmodBody


FAMILIES = [
    Family(
        "xmod",
        XmodModel,
        "RoBERTa with per-language adapters; the graph runs config.json's default_language",
        ("facebook/xmod-base",),
        rules=XmodRules(),
        task="feature-extraction",
        category="encoder",
        unused=(
            *roberta_unused("roberta"),
            r"(roberta\.)?encoder\.layer\.\d+\.output\.adapter_modules\..*",
        ),
        prefix="roberta.",
    ),
]

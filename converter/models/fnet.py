"""FNet: BERT's post-norm layers under `fnet` with no attention: each layer's token mixing is
the real part of the 2-D Fourier transform over sequence and hidden axes
(converter/components/fourier.py), added to its input and normed (`fourier.output`). The
embeddings (words + token types + positions, LayerNorm) go through `embeddings.projection`.
transformers takes no attention mask: padded tokens are mixed in like any other, and so they are
here (the graph's attention_mask input is read by nothing). use_tpu_fourier_optimizations
computes the same transform by DFT matrices (transformers then runs only inputs of
tpu_short_seq_length tokens). Heads: BERT's (the masked LM's decoder keeps its own bias when
untied), the sequence classifier on the pooler."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import LayerNorm, Linear
from converter.components.fourier import FourierMixing
from converter.config.encoder import EncoderConfig, EncoderRules
from converter.config.reader import ConfigReader
from converter.execution_providers import SKIP_NORM
from converter.models.encoder import (
    BertBody,
    BertEmbeddings,
    BertEncoder,
    BertEncoderModel,
    BertIntermediate,
    BertPredictions,
    DenseNorm,
)
from converter.registry import Family
from converter.tasks.encoding import TextInputs


class FNetRules(EncoderRules):
    def read(self, r: ConfigReader) -> EncoderConfig:
        # no attention heads: one spanning the hidden size keeps the shared reader's checks
        r.raw["num_attention_heads"] = 1
        return super().read(r)

    def read_extra(self, r: ConfigReader) -> dict:
        return {"tied": r.bool("tie_word_embeddings", True)}


class FNetEmbeddings(BertEmbeddings):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__(cfg, dtype)
        self.projection = Linear(cfg.hidden_size, cfg.hidden_size, True, dtype)

    def forward(self, op, inputs: TextInputs):
        return self.projection(op, super().forward(op, inputs))


class FourierOutput(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.LayerNorm = LayerNorm(cfg.hidden_size, cfg.norm_eps, dtype)

    def forward(self, op, mixed, residual):
        return self.LayerNorm(op, op.Add(residual, mixed))


class FNetFourier(nn.Module):
    """`fourier`: the mixing (transformers' `fourier.self`, which holds no weights), then
    `output`."""

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.output = FourierOutput(cfg, dtype)

    def forward(self, op, x, mixing: FourierMixing):
        return self.output(op, mixing(op, x), x)


class FNetLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType):
        super().__init__()
        self.fourier = FNetFourier(cfg, dtype)
        self.intermediate = BertIntermediate(cfg, dtype)
        self.output = DenseNorm(cfg.intermediate_size, cfg, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        return {"skip_norms": 2 if plan.has(SKIP_NORM) else 0}

    def forward(self, op, x, mixing: FourierMixing, bias=None):
        x = self.fourier(op, x, mixing)
        return self.output(op, self.intermediate(op, x), x)


class FNetEncoder(BertEncoder):
    layer_cls = FNetLayer


class FNetBody(BertBody):
    """BERT's body with the Fourier mixing as every layer's `kernel`."""

    embeddings_cls = FNetEmbeddings
    encoder_cls = FNetEncoder

    def __init__(self, cfg: EncoderConfig, dtype: ir.DataType, ep, pooled):
        super().__init__(cfg, dtype, ep, pooled)
        self.hidden = cfg.hidden_size

    def attention_kernel(self, op, inputs: TextInputs):
        return FourierMixing(op, inputs.input_ids, self.hidden, self.dtype)


class FNetModel(BertEncoderModel):
    body_cls = FNetBody
    body_name = "fnet"

    def make_head(self, cfg, dtype, task: str, tensors: frozenset[str]) -> None:
        if task == "fill-mask":
            self.cls = BertPredictions(cfg, dtype, cfg.extra["tied"], decoder_bias=True)
        else:
            super().make_head(cfg, dtype, task, tensors)


FAMILIES = [
    Family(
        "fnet",
        FNetModel,
        "BERT-layout layers mixing tokens by the real part of a 2-D Fourier transform (no "
        "attention), embeddings projected",
        ("google/fnet-base", "google/fnet-large"),
        rules=FNetRules(),
        task="feature-extraction",
        category="encoder",
        # buffers, the heads of other tasks, whichever masked-LM bias the tying leaves unread
        # and a pooler the head does not use
        unused=(
            r"(fnet\.)?embeddings\.(position_ids|token_type_ids)",
            r"cls\..*",
            r"classifier\..*",
            r"qa_outputs\..*",
            r"(fnet\.)?pooler\..*",
            # transformers' complex64 DFT matrices under use_tpu_fourier_optimizations
            r"(fnet\.)?encoder\.layer\.\d+\.fourier\.self\.dft_mat_(hidden|seq)",
        ),
        prefix="fnet.",
    ),
]

"""ModernVBERT: ModernBERT (modernbert.py) reading images as well as text, laid out as UltraVBERT
(ultravbert.py: a SigLIP tower over pixel_values [batch, num_images, 3, S, S], blank images
dropped, a pixel-shuffle connector, its tokens replacing the image tokens' embeddings in order)
with two differences: the connector only projects (no norm), and the merged embeddings then go
through ModernBERT's embedding norm. Heads are ModernBERT's, over the text config: `projection_head`
(dense, act, norm) and `lm_head` (tied to the token table under the top-level
tie_word_embeddings, its own bias by decoder_bias either way); classifiers run `head` first, the
sequence classifier over the first token (cls) or the mean of the unpadded ones (mean)."""

from __future__ import annotations

import onnx_ir as ir

from converter.components import Linear
from converter.components.linear import Bias
from converter.models.modernbert import (
    ModernBertBody,
    ModernBertConfig,
    ModernBertEmbeddings,
    ModernBertRules,
    PredictionHead,
)
from converter.models.ultravbert import (
    UltraVBertBody,
    UltraVBertConfig,
    UltraVBertConnector,
    UltraVBertModel,
    UltraVBertRules,
)
from converter.models.vision_language import merge_image_features
from converter.registry import Family
from converter.tasks.encoding import TextInputs


class ModernVBertConnector(UltraVBertConnector):
    normed = False


class ModernVBertEmbeddings(ModernBertEmbeddings):
    """The token rows, those at the image tokens replaced by the image features, then normed."""

    def forward(self, op, input_ids, features, image_token_id: int):
        rows = self.tok_embeddings(op, input_ids)
        return self.norm(op, merge_image_features(op, rows, input_ids, features, image_token_id))


class ModernVBertTextModel(ModernBertBody):
    def __init__(self, cfg: ModernBertConfig, dtype: ir.DataType, ep, pooled: bool):
        super().__init__(cfg, dtype, ep, pooled)
        self.embeddings = ModernVBertEmbeddings(cfg, dtype)

    def forward(self, op, inputs: TextInputs, features):
        x = self.embeddings(op, inputs.input_ids, features, self.image_token_id)
        return self.encode(op, inputs, x)


class ModernVBertBody(UltraVBertBody):
    connector_cls, text_cls = ModernVBertConnector, ModernVBertTextModel


class ModernVBertModel(UltraVBertModel):
    body_cls = ModernVBertBody

    def make_head(self, cfg: UltraVBertConfig, dtype, task: str, tensors) -> None:
        text = cfg.text
        if task == "fill-mask":
            self.projection_head = PredictionHead(text, dtype)
            if not cfg.tie_word_embeddings:
                size, vocab, bias = text.hidden_size, text.vocab_size, text.decoder_bias
                self.lm_head = Linear(size, vocab, bias, dtype, head=True)
            else:  # the token table, and its own bias (decoder_bias)
                self.lm_head = Bias(text.vocab_size, dtype) if text.decoder_bias else None
        elif task != "feature-extraction":
            self.head = PredictionHead(text, dtype)
            self.classifier = Linear(text.hidden_size, cfg.num_labels, True, dtype)

    def word_table(self):
        return self.body.text_model.embeddings.tok_embeddings.weight

    def mlm_logits(self, op, x):
        if not self.cfg.tie_word_embeddings:
            return self.lm_head(op, x)
        logits = op.MatMul(x, op.Transpose(self.word_table(), perm=[1, 0]))
        return logits if self.lm_head is None else self.lm_head(op, logits)

    def classify(self, op, x):
        return self.classifier(op, self.head(op, x))


FAMILIES = [
    Family(
        "modernvbert",
        ModernVBertModel,
        "ModernBERT reading images too: a SigLIP tower and a pixel-shuffle connector into the "
        "image tokens' embeddings before the embedding norm (input_ids, attention_mask, "
        "pixel_values)",
        ("ModernVBERT/modernvbert",),
        rules=UltraVBertRules("modernbert", ModernBertRules()),
        task="feature-extraction",
        category="encoder",
        prefix="model.",
        unused=(r"(model\.)?vision_model\.head\..*",),  # SigLIP's pooling head, never run
    ),
]

"""Blenderbot-small: BART's post-norm layers with learned positions read at the position itself
(no +2 offset). The encoder norms tokens + positions (layernorm_embedding, as BART); the decoder
norms its token embeddings before the positions are added, and (transformers 5.24) does not
scale them even with scale_embedding, which only the encoder applies."""

from __future__ import annotations

from converter.components.embedding import Embedding
from converter.config.seq2seq import Seq2SeqRules
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.seq2seq import Seq2SeqBody, Seq2SeqDecoder, Seq2SeqModel
from converter.registry import Family


class BlenderbotSmallDecoder(Seq2SeqDecoder):
    def __init__(self, cfg, dtype, layers: int):
        super().__init__(cfg, dtype, layers)
        if self.embed_tokens is not None:  # untied: its own table, unscaled
            self.embed_tokens = Embedding(cfg.vocab_size, cfg.d_model, dtype)

    def expected_fusions(self, plan) -> dict[str, int]:
        counts = super().expected_fusions(plan)
        if "skip_norms" in counts:  # layernorm_embedding reads the tokens, not a sum
            counts["skip_norms"] -= 1
        return counts

    def embed(self, op, input_ids, tokens, start=None):
        x = self.embed_tokens(op, input_ids) if tokens is None else tokens
        x = self.layernorm_embedding(op, x)
        return op.Add(x, self.embed_positions(op, self.position_ids(op, input_ids, start)))


class BlenderbotSmallBody(Seq2SeqBody):
    def decode(self, op, input_ids, self_past, cross, kernels):
        """The decoder reads the shared table unscaled (the encoder reads it scaled)."""
        if self.shared is None:
            return super().decode(op, input_ids, self_past, cross, kernels)
        scale, self.shared.scale = self.shared.scale, 1.0
        try:
            return super().decode(op, input_ids, self_past, cross, kernels)
        finally:
            self.shared.scale = scale


class BlenderbotSmallModel(Seq2SeqModel):
    body_cls = BlenderbotSmallBody
    decoder_cls = BlenderbotSmallDecoder


FAMILIES = [
    Family(
        "blenderbot-small",
        BlenderbotSmallModel,
        "encoder-decoder, post-norm, learned positions without offset; the decoder's "
        "layernorm_embedding norms the (unscaled) token embeddings before the positions",
        ("facebook/blenderbot_small-90M",),
        rules=Seq2SeqRules(position_offset=0),
        task="text2text-generation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

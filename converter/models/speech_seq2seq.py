"""What the speech encoder-decoders (Whisper, Moonshine, Speech2Text) share: the speech task, a
body built per part by `speech_body_cls(cfg, dtype, part)`, an LM head under `head_name` unless
it is tied to the decoder's `embed_tokens`, and no final_logits_bias."""

from __future__ import annotations

from typing import ClassVar

from converter.components.seq2seq_attention import Steps
from converter.errors import ConfigError
from converter.models.decoder import tied_logits
from converter.models.seq2seq import PARTS, Seq2SeqModel
from converter.tasks.speech_seq2seq import SPEECH_TASK


class SpeechSeq2SeqModel(Seq2SeqModel):
    heads = (SPEECH_TASK,)
    head_tasks: ClassVar[dict[str, str]] = {"ForConditionalGeneration": SPEECH_TASK}
    headless_task = SPEECH_TASK
    modality = "audio"
    head_name = "proj_out"
    speech_body_cls: ClassVar[type]
    parts: ClassVar[tuple[str, ...]] = PARTS
    decoding_parts: ClassVar[tuple[str, ...]] = ("decoder", "both")

    def __init__(self, cfg, dtype, ep, task: str, tensors: frozenset[str], part: str = "both"):
        Steps.__init__(self)
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} converts for {', '.join(self.heads)}, not {task}")
        if part not in self.parts:
            raise ValueError(f"part must be one of {', '.join(self.parts)}")
        self.cfg, self.dtype, self.ep, self.task, self.tensors = cfg, dtype, ep, task, tensors
        self.decodes = part in self.decoding_parts
        setattr(self, self.body_name, self.speech_body_cls(cfg, dtype, part))
        setattr(self, self.head_name, self.make_head(cfg, dtype) if self.decodes else None)

    def expected_fusions(self, plan) -> dict[str, int]:
        """int4 builds (unless the head stays float) multiply a tied head by a quantized copy."""
        int4, head = plan.int4, getattr(self, self.head_name)
        tied_head = self.decodes and head is None
        return {"int4_matmuls": 1} if tied_head and int4 is not None and int4.head_bits else {}

    def logits(self, op, hidden):
        head = getattr(self, self.head_name)
        if head is not None:
            return head(op, hidden)
        return tied_logits(op, self.cfg, self.body.decoder.embed_tokens.weight, hidden)

"""MVP: BART's encoder-decoder; its optional lightweight prompts (use_prompt: learned key /
value prefixes for every attention layer) are refused."""

from __future__ import annotations

from converter.config.reader import ConfigReader
from converter.config.seq2seq import Seq2SeqRules
from converter.models.bart import SEQ2SEQ_UNUSED
from converter.models.seq2seq import Seq2SeqModel
from converter.registry import Family


class MvpRules(Seq2SeqRules):
    def refuse_unsupported(self, r: ConfigReader) -> None:
        super().refuse_unsupported(r)
        if r.bool("use_prompt", False):
            r.refuse(
                "use_prompt",
                "MVP's prompts (key / value prefixes computed from prompt_embedding and "
                "prompt_trans for every attention layer) are not built",
            )


FAMILIES = [
    Family(
        "mvp",
        Seq2SeqModel,
        "BART's encoder-decoder (multi-task supervised pre-training); prompts refused",
        ("RUCAIBox/mvp",),
        rules=MvpRules(),
        task="text2text-generation",
        category="seq2seq",
        unused=SEQ2SEQ_UNUSED,
        prefix="model.",
    ),
]

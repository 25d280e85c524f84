"""Which task a build makes: the one asked for, else the head config.json's `architectures`
names (`BertForMaskedLM` -> fill-mask, `BertModel` -> feature-extraction; a model class may
read some endings its own way in `head_tasks`: `CLIPModel` is zero-shot image classification),
else the family's default. A bare `...Model` is the headless task of the family's modality:
its model class says which (`headless_task`, e.g. image-feature-extraction for `ViTModel`;
feature-extraction unless it says). A head that generates text converts for its family's own
generation task (Marian's translation, Pegasus' summarization, BART's text2text-generation):
the graphs are the same under each of those names, only the package's metadata differs. A head
mobius does not convert is refused by name."""

from __future__ import annotations

from converter.errors import ConfigError
from converter.tasks.seq2seq import SEQ2SEQ_TASKS

# the class-name endings of transformers' task heads, longest first when matching
HEAD_TASKS = {
    "ForMaskedLM": "fill-mask",
    "ForPreTraining": "fill-mask",
    "ForSequenceClassification": "text-classification",
    "ForTokenClassification": "token-classification",
    "ForQuestionAnswering": "question-answering",
    "ForQuestionAnsweringSimple": "question-answering",  # XLM, FlauBERT
    "WithLMHeadModel": "fill-mask",  # XLM's and FlauBERT's masked-LM heads
    "ForImageClassification": "image-classification",
    "ForImageClassificationWithTeacher": "image-classification",
    "ForCTC": "automatic-speech-recognition",
    "ForAudioClassification": "audio-classification",
    "Model": "feature-extraction",
    "ForCausalLM": "text-generation",
    "LMHeadModel": "text-generation",
}
# tasks whose head class names another modality's task too: the one its family converts
# (Wav2Vec2ForSequenceClassification pools audio frames: audio classification)
SAME_HEAD = {"text-classification": ("audio-classification",)}


def task_of(raw: dict, family, asked: str | None) -> str:
    """The task name to build for `family` from config.json `raw`; `asked` wins if given."""
    if asked is not None:
        if asked not in family.tasks:
            raise ConfigError(
                f"{family.model_type} models convert for {', '.join(family.tasks)}, not {asked}"
            )
        return asked
    architectures = raw.get("architectures")
    if family.task == "text-generation" or not architectures:
        return family.task
    if not isinstance(architectures, list) or not isinstance(architectures[0], str):
        raise ConfigError("'architectures' must list class names")
    head = architectures[0]
    head_tasks = {**HEAD_TASKS, **getattr(family.model_class, "head_tasks", {})}
    endings = sorted((e for e in head_tasks if head.endswith(e)), key=len, reverse=True)
    task = head_tasks[endings[0]] if endings else None
    if endings and endings[0] == "Model":
        task = getattr(family.model_class, "headless_task", task)
    if task in SEQ2SEQ_TASKS and family.task in SEQ2SEQ_TASKS:
        task = family.task
    if task not in family.tasks:
        task = next((t for t in SAME_HEAD.get(task, ()) if t in family.tasks), task)
    if task not in family.tasks:
        raise ConfigError(
            f"architectures[0] = {head!r} is a head mobius does not convert; {family.model_type} "
            f"converts for {', '.join(family.tasks)} (choose one with --task)"
        )
    return task

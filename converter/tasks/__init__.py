"""Tasks: the I/O contracts. A task turns a model into named components (role, graph, I/O
names); only tasks name graph inputs and outputs."""

from converter.tasks.audio_encoding import AUDIO_TASKS, AudioEncodingTask
from converter.tasks.base import OPSET, Component
from converter.tasks.encoding import TEXT_TASKS, TextEncodingTask
from converter.tasks.image_encoding import IMAGE_TASKS, ImageEncodingTask
from converter.tasks.modality import PerModality
from converter.tasks.seq2seq import SEQ2SEQ_TASKS, Seq2SeqTask
from converter.tasks.speech_seq2seq import SPEECH_TASK, SpeechRecognition
from converter.tasks.text_generation import DecoderInputs, TextGenerationTask
from converter.tasks.vision_language import VLM_TASK, VisionLanguageTask
from converter.tasks.zero_shot import ZERO_SHOT, ZeroShotImageTask

# the task class of each input modality, for task names several modalities share
TASK_CLASSES = {"text": TextEncodingTask, "audio": AudioEncodingTask}

TASKS = {
    "text-generation": TextGenerationTask(),
    **{name: TextEncodingTask(name) for name in TEXT_TASKS},
    **{name: AudioEncodingTask(name) for name in AUDIO_TASKS},
    # CTC encoders and speech encoder-decoders (Whisper) share the name
    SPEECH_TASK: SpeechRecognition(AudioEncodingTask(SPEECH_TASK)),
    "feature-extraction": PerModality(
        "feature-extraction",
        {modality: TASK_CLASSES[modality]("feature-extraction") for modality in TASK_CLASSES},
    ),
    ZERO_SHOT: ZeroShotImageTask(),
    **{name: ImageEncodingTask(name) for name in IMAGE_TASKS},
    # ImageGPT classifies images its processor gives as colour-cluster token ids
    "image-classification": PerModality(
        "image-classification",
        {
            "image": ImageEncodingTask("image-classification"),
            "text": TextEncodingTask("image-classification"),
        },
        default="image",
    ),
    **{name: Seq2SeqTask(name) for name in SEQ2SEQ_TASKS},
    VLM_TASK: VisionLanguageTask(),
}

__all__ = ["OPSET", "TASKS", "Component", "DecoderInputs", "TextGenerationTask"]

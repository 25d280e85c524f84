"""Tasks: the I/O contracts. A task turns a model into named components (role, graph, I/O
names); only tasks name graph inputs and outputs."""

from converter.tasks.base import OPSET, Component
from converter.tasks.encoding import TEXT_TASKS, TextEncodingTask
from converter.tasks.image_encoding import IMAGE_TASKS, ImageEncodingTask
from converter.tasks.text_generation import DecoderInputs, TextGenerationTask

TASKS = {
    "text-generation": TextGenerationTask(),
    **{name: TextEncodingTask(name) for name in TEXT_TASKS},
    **{name: ImageEncodingTask(name) for name in IMAGE_TASKS},
}

__all__ = ["OPSET", "TASKS", "Component", "DecoderInputs", "TextGenerationTask"]

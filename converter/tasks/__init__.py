"""Tasks: the I/O contracts. A task turns a model into named components (role, graph, I/O
names); only tasks name graph inputs and outputs."""

from converter.tasks.base import OPSET, Component
from converter.tasks.encoding import TEXT_TASKS, TextEncodingTask
from converter.tasks.text_generation import DecoderInputs, TextGenerationTask
from converter.tasks.zero_shot import ZERO_SHOT, ZeroShotImageTask

TASKS = {
    "text-generation": TextGenerationTask(),
    **{name: TextEncodingTask(name) for name in TEXT_TASKS},
    ZERO_SHOT: ZeroShotImageTask(),
}

__all__ = ["OPSET", "TASKS", "Component", "DecoderInputs", "TextGenerationTask"]

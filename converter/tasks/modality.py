"""A task name that models of several modalities share (feature-extraction; image-classification,
which ImageGPT runs over colour-cluster token ids): the model's `modality` (the task's `default`
unless its class says otherwise) picks the task that names its inputs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PerModality:
    name: str
    tasks: Mapping[str, Any]  # modality -> the task object of that name
    default: str = "text"

    def components(self, model, cfg, dtype):
        modality = getattr(model, "modality", self.default)
        return self.tasks[modality].components(model, cfg, dtype)

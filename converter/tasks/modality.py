"""A task name that models of several modalities share (feature-extraction): the model's
`modality` ("text" unless its class says otherwise) picks the task that names its inputs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PerModality:
    name: str
    tasks: Mapping[str, Any]  # modality -> the task object of that name

    def components(self, model, cfg, dtype):
        modality = getattr(model, "modality", "text")
        return self.tasks[modality].components(model, cfg, dtype)

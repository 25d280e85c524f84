"""What every image encoder shares: a body under the checkpoint's base-model name that turns
pixel_values into `Features`, and the task's head on top (image-classification's `classifier`,
or the features themselves for image-feature-extraction).

A family sets `body_cls` and `body_name`, says which pooler its checkpoint carries
(`uses_pooler`) and what its classifier reads (`classify`)."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import nn

from converter.components import Linear
from converter.errors import ConfigError
from converter.tasks.encoding import BATCH
from converter.tasks.image_encoding import IMAGE_TASKS, ImageInputs


@dataclass
class Features:
    """What a body computes: last_hidden_state and (where the model has one) pooler_output, each
    with its symbolic dims as transformers shapes them."""

    hidden: ir.Value
    hidden_dims: list
    pooled: ir.Value | None = None
    pooled_dims: list | None = None

    def outputs(self) -> dict:
        out = {"last_hidden_state": (self.hidden, self.hidden_dims)}
        if self.pooled is not None:
            out["pooler_output"] = (self.pooled, self.pooled_dims)
        return out


class Dense(nn.Module):
    """A Linear held as `dense` (`output.dense`, `intermediate.dense`, `pooler.dense`)."""

    def __init__(self, in_size: int, out_size: int, dtype: ir.DataType, bias: bool = True):
        super().__init__()
        self.dense = Linear(in_size, out_size, bias, dtype)

    def forward(self, op, x):
        return self.dense(op, x)


def first_token(op, hidden):
    """hidden[:, 0] of [batch, tokens, hidden]."""
    return op.Squeeze(op.Slice(hidden, [0], [1], [1]), [1])


def batch_of(op, x):
    """x's batch size as a 1-D shape tensor."""
    return op.Shape(x, start=0, end=1)


class VisionEncoderModel(nn.Module):
    """A body under `body_name` and the task's head (`classifier` over what `classify` reads:
    the pooler output unless the family says otherwise)."""

    body_cls: type
    body_name: str
    heads = IMAGE_TASKS
    headless_task = "image-feature-extraction"  # what a bare `...Model` checkpoint converts for

    def __init__(self, cfg, dtype: ir.DataType, ep, task: str, tensors: frozenset[str]):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        self.cfg, self.task = cfg, task
        pooled = self.uses_pooler(task, tensors)
        setattr(self, self.body_name, self.body_cls(cfg, dtype, ep, pooled))
        if task == "image-classification":
            self.make_classifier(cfg, dtype, tensors)

    def has(self, tensors: frozenset[str], name: str) -> bool:
        return name in tensors or f"{self.body_name}.{name}" in tensors

    def uses_pooler(self, task: str, tensors: frozenset[str]) -> bool:
        """Whether the body builds its pooler (one without weights: whenever the task reads it)."""
        return True

    def make_classifier(self, cfg, dtype: ir.DataType, tensors: frozenset[str]) -> None:
        self.classifier = Linear(cfg.hidden_size, cfg.num_labels, True, dtype)

    def classify(self, op, features: Features):
        return self.classifier(op, features.pooled)

    @property
    def body(self):
        return getattr(self, self.body_name)

    def image_dims(self) -> tuple[int | str, int | str]:
        """pixel_values' height and width: fixed numbers, or symbolic for any size."""
        return self.body.image_dims()

    def forward(self, op, inputs: ImageInputs) -> dict:
        features = self.body(op, inputs.pixel_values)
        if self.task == "image-feature-extraction":
            return features.outputs()
        return {"logits": (self.classify(op, features), [BATCH, self.cfg.num_labels])}

"""What convolutional and hybrid image encoders share on top of converter/models/vision.py: a
body that keeps its config and says whether it builds the pooler (and takes any image size, or
the configured one), the checkpoint tensors no graph reads, the moves between maps and token
sequences, and the models transformers gives only a classifier."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components.batch_norm import BATCH_NORM_UNUSED
from converter.config.convnet import ConvNetConfig
from converter.errors import ConfigError
from converter.tasks.encoding import BATCH
from converter.tasks.image_encoding import HEIGHT, WIDTH

# BatchNorm's step counter (saved with every checkpoint, read by no graph) and the classifier of
# a checkpoint converted for its features
CONVNET_UNUSED = (BATCH_NORM_UNUSED, r"classifier\..*")


class ConvNetBody(nn.Module):
    """A body that takes images of any size (`static` ones: the configured size only)."""

    static = False

    def __init__(self, cfg: ConvNetConfig, dtype, ep, pooled: bool):
        super().__init__()
        self.cfg, self.dtype, self.ep, self.pooled = cfg, dtype, ep, pooled

    def image_dims(self) -> tuple[int | str, int | str]:
        return self.cfg.image_size if self.static else (HEIGHT, WIDTH)


def to_tokens(op, maps):
    """[batch, channels, height, width] -> [batch, height * width, channels]"""
    return op.Transpose(op.Reshape(maps, [0, 0, -1]), perm=[0, 2, 1])


def to_maps(op, tokens, size):
    """[batch, height * width, channels] -> [batch, channels, height, width]: `size` is
    (height, width), numbers or the 1-D tensor `map_size` gives."""
    shape = op.Concat([0, 0], size, axis=0) if isinstance(size, ir.Value) else [0, 0, *size]
    return op.Reshape(op.Transpose(tokens, perm=[0, 2, 1]), shape)


def map_size(op, maps):
    """The (height, width) of maps [batch, channels, height, width] at run time."""
    return op.Shape(maps, start=2, end=4)


class ClassifierOnly(nn.Module):
    """A family transformers gives only a classifier (no bare `...Model`): its modules sit at
    the checkpoint's top level. Subclasses build them and return the logits from `logits`."""

    heads = ("image-classification",)

    def __init__(self, cfg: ConvNetConfig, dtype, ep, task: str, tensors: frozenset[str]):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} converts for image-classification only")
        self.cfg = cfg

    def image_dims(self) -> tuple[str, str]:
        return (HEIGHT, WIDTH)

    def logits(self, op, pixel_values):
        raise NotImplementedError

    def forward(self, op, inputs) -> dict:
        logits = self.logits(op, inputs.pixel_values)
        return {"logits": (logits, [BATCH, self.cfg.num_labels])}

"""What convolutional image encoders share on top of converter/models/vision.py: a body that
keeps its config and says whether it builds the pooler, feature maps of any height and width,
and the checkpoint tensors no graph reads."""

from __future__ import annotations

from onnxscript import nn

from converter.config.convnet import ConvNetConfig
from converter.tasks.image_encoding import HEIGHT, WIDTH

# the height and width of feature maps: the input's, divided by the model's total stride
MAP_DIMS = ("map_height", "map_width")

# BatchNorm's step counter (saved with every checkpoint, read by no graph) and the classifier of
# a checkpoint converted for its features
CONVNET_UNUSED = (r".*\.num_batches_tracked", r"classifier\..*")


class ConvNetBody(nn.Module):
    """A body that takes images of any size (`static` ones: the configured size only)."""

    static = False

    def __init__(self, cfg: ConvNetConfig, dtype, ep, pooled: bool):
        super().__init__()
        self.cfg, self.dtype, self.ep, self.pooled = cfg, dtype, ep, pooled

    def image_dims(self) -> tuple[int | str, int | str]:
        return self.cfg.image_size if self.static else (HEIGHT, WIDTH)

"""Image encoder tasks: one graph over pixel_values [batch_size, num_channels, height, width]
(already resized and normalized by the model's image processor), saved as `onnx/model.onnx`
like the text encoders. What comes out depends on the head:
  image-classification      logits [batch_size, num_labels]
  image-feature-extraction  last_hidden_state (+ pooler_output where the model has a pooler),
                            shaped as the family's transformers model returns them
A model whose position tables or windows are built for the configured image size declares
height and width as those numbers; a model that takes any size (convolutional ones, DINOv2's
interpolated positions) declares them symbolic. The model returns {output name: (value, symbolic
dims)}; the task names the graph's I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.tasks.base import Component, as_model, new_graph, set_float32_output
from converter.tasks.encoding import BATCH, ENCODER_FILE

IMAGE_TASKS = ("image-classification", "image-feature-extraction")
HEIGHT, WIDTH = "height", "width"


@dataclass
class ImageInputs:
    pixel_values: ir.Value  # [batch, channels, height, width] in the graph's float type


@dataclass(frozen=True)
class ImageEncodingTask:
    name: str

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        graph = new_graph()
        builder = GraphBuilder(graph)
        height, width = model.image_dims()
        dims = [BATCH, cfg.num_channels, height, width]
        # float32 pixels in (what image processors give), float32 outputs out, any dtype inside
        pixel_values = builder.input("pixel_values", ir.DataType.FLOAT, dims)
        if dtype != ir.DataType.FLOAT:
            pixel_values = builder.op.Cast(pixel_values, to=dtype)
        outputs = model(builder.op, ImageInputs(pixel_values))
        for name, (value, dims) in outputs.items():
            set_float32_output(builder, value, name, dims, dtype)
        return [Component("encoder", ENCODER_FILE, as_model(graph), model, {})]
